"""One case per bug the property, schema and permission tests found, kept as plain tests so each fix
stays pinned even if the generated examples change."""
import io
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Example
from annotation.services.assignments import claim_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def nli_page(make_project, import_rows, worker):
    project = make_project("nli_label", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(2)])
    return claim_page(project, worker)


@pytest.fixture
def worker_api(worker):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=worker).key}")
    return api


def test_seconds_past_the_float_range_are_refused(nli_page, worker_api):
    answers = {str(claim.item_id): {"value": "e", "seconds": 10**400} for claim in nli_page.claims.all()}
    response = worker_api.post(f"/api/assignments/{nli_page.pk}/submit/", json.dumps({"answers": answers}), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["field"].endswith(".seconds")
    assert not Annotation.objects.exists()
