import io
import itertools

import pytest

from annotation.models import CrowdSession
from annotation.services.assignments import claim_page, submit_page
from annotation.services.crowd import crowd
from annotation.services.quality import record_gold_answers
from dataset_io.services.importers import import_stream
from tests.recruitment.standin import StandIn

TOKEN = "prolific-secret-token-Zq81"
WEBHOOK_SECRET = "hook-secret-Kp2"
SITE = "https://studio.example.org"


@pytest.fixture
def standin(settings):
    server = StandIn(TOKEN).start()
    settings.PROLIFIC_API_URL = server.url
    yield server
    server.stop()


@pytest.fixture
def snli_lines(shared_data):
    """Real SNLI dev rows (the shared data set), as JSONL text."""
    with open(shared_data / "snli" / "snli_dev_gold_only.jsonl", encoding="utf-8") as handle:
        return list(itertools.islice(handle, 40))


@pytest.fixture
def study(make_project, snli_lines, author):
    """A 3-way label study of SNLI pairs on a platform audience, with gold checks, linked to Prolific."""
    from recruitment.services.studies import save_link

    project = make_project("nli_label", slug="wave-one", items_per_page=2, completion_pages=1)
    import_stream(project, io.StringIO("".join(snli_lines[:30])), "snli")
    import_stream(project, io.StringIO("".join(snli_lines[30:36])), "snli", purpose="gold")
    save_link(
        project,
        author,
        token=TOKEN,
        webhook_secret=WEBHOOK_SECRET,
        name="Judge sentence pairs",
        places=3,
        reward_cents=150,
        currency="GBP",
        estimated_minutes=8,
        screen_out_reward_cents=20,
        screen_out_slots=3,
    )
    return project


def arrive(project, participant_id: str, pages: int = 0, gold: list[bool] | None = None) -> CrowdSession:
    """A Prolific participant arrives through the study's entry link, submits `pages` pages and, when given,
    gets these gold results; with pages done the study shows them the completion code."""
    linked = crowd.platform_study(project, "prolific")
    study_id = linked.study_id if linked else "S"
    params = {"PROLIFIC_PID": participant_id, "STUDY_ID": study_id, "SESSION_ID": f"session-{participant_id}"}
    session = crowd.enter(project, params)
    for _ in range(pages):
        page = claim_page(project, session.worker)
        submit_page(page.pk, session.worker, {str(c.item_id): {"value": "e"} for c in page.claims.all()})
    if gold:
        record_gold_answers(project, session.worker, gold)
    if pages and crowd.may_finish(session):
        crowd.complete(session)
    return session
