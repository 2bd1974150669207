"""Overdue pages go back to the pool through the periodic expiry loop (bin/serve runs
`manage.py expire_claims --every N`), with no claim traffic at all to trigger it."""

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, Item
from annotation.services.assignments import claim_page

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
REPO = Path(__file__).resolve().parents[2]
PERIOD_S = 1


def test_an_overdue_page_returns_its_items_within_one_period_without_any_claim(
    make_project, import_rows, worker, tmp_path
):
    project = make_project("nli_label", items_per_page=2, redundancy=1)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(2)])
    page = claim_page(project, worker)
    held = sorted(page.claims.values_list("item_id", flat=True))
    assert len(held) == 2 and not Item.objects.filter(pk__in=held, claimable=True).exists()

    db = connection.settings_dict
    env = dict(
        os.environ,
        NLI_STUDIO_VAR=str(tmp_path),
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
    )
    loop = subprocess.Popen(
        [sys.executable, "manage.py", "expire_claims", "--every", str(PERIOD_S)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert "every" in loop.stdout.readline()  # the loop runs (Django loaded, first pass done)
        deadline = timezone.now() + timedelta(seconds=1)
        Assignment.objects.filter(pk=page.pk).update(expires_at=deadline)
        time.sleep(1)
        # From the deadline on, one period (plus a second for a busy machine) and no claim in between.
        waited = 0.0
        while waited < PERIOD_S + 1 and Item.objects.filter(pk__in=held, claimable=True).count() < 2:
            time.sleep(0.1)
            waited += 0.1
        assert Item.objects.filter(pk__in=held, claimable=True, active_claims=0).count() == 2
        assert Assignment.objects.get(pk=page.pk).status == Assignment.Status.EXPIRED
    finally:
        loop.terminate()
        loop.wait(timeout=20)
