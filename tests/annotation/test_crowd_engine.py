"""Qualification, gold checks and suspension, crowd platform entry, adaptive pages, incremental redundancy."""

import random
from statistics import median

import pytest
from rest_framework.test import APIClient

from annotation.models import Annotation, CrowdSession, Item, QualificationAttempt, WorkerStatus
from annotation.services.assignments import claim_page, submit_page
from annotation.services.qualification import create_test, take_test
from annotation.services.redundancy import adaptive_priority
from annotation.tasktypes.unli_slider import position_to_probability

pytestmark = pytest.mark.django_db

SLIDER_REFERENCES = [  # (probability, easy)
    (0.02, True),
    (0.98, True),
    (0.5, False),
    (0.3, False),
    (0.8, False),
    (0.1, False),
]


def closest_position(probability: float) -> int:
    return min(range(10001), key=lambda x: abs(position_to_probability(x) - probability))


@pytest.fixture
def slider_test():
    rows = [
        {"premise": f"P{i}", "hypothesis": f"H{i}", "reference": y, "easy": easy}
        for i, (y, easy) in enumerate(SLIDER_REFERENCES)
    ]
    return create_test("slider-qual", "unli_slider", rows, max_attempts=2)


@pytest.fixture
def gated_project(make_project, import_rows, slider_test):
    project = make_project("unli_slider", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(4)])
    project.qualification = slider_test
    project.save()
    return project


def answers_for(test, probabilities):
    return {str(item.id): {"value": closest_position(p)} for item, p in zip(test.items.all(), probabilities)}


def test_slider_qualification_rules(slider_test, make_user):
    good = take_test(slider_test, make_user("good"), answers_for(slider_test, [y for y, _ in SLIDER_REFERENCES]))
    assert good.passed and good.details["pearson"] > 0.99
    # Correlated overall but an easy item outside min(y, 1-y)/4: 0.98 answered as 0.9 fails.
    off = [0.9 if y == 0.98 else y for y, _ in SLIDER_REFERENCES]
    assert not take_test(slider_test, make_user("off"), answers_for(slider_test, off)).passed
    # Easy items right, the rest reversed: correlation too low.
    reversed_rest = [y if easy else 1 - y for y, easy in SLIDER_REFERENCES]
    assert not take_test(slider_test, make_user("rev"), answers_for(slider_test, reversed_rest)).passed


def test_attempts_are_limited(slider_test, make_user):
    from annotation.services.answers import SubmissionError

    worker = make_user("tries")
    bad = answers_for(slider_test, [0.5] * len(SLIDER_REFERENCES))
    take_test(slider_test, worker, bad)
    take_test(slider_test, worker, bad)
    with pytest.raises(SubmissionError) as error:
        take_test(slider_test, worker, bad)
    assert error.value.status == 403
    assert QualificationAttempt.objects.filter(worker=worker).count() == 2


def test_unqualified_worker_gets_403_on_claim_and_submit_whatever_the_client(
    gated_project, slider_test, make_user, client
):
    worker = make_user("newbie")
    api = APIClient()
    api.force_authenticate(worker)
    assert api.post(f"/api/projects/{gated_project.slug}/claim/").status_code == 403
    # A page claimed while qualified stays unsubmittable once the gate closes (here: before qualifying).
    take_test(slider_test, worker, answers_for(slider_test, [y for y, _ in SLIDER_REFERENCES]))
    page = api.post(f"/api/projects/{gated_project.slug}/claim/").json()
    QualificationAttempt.objects.filter(worker=worker).delete()
    answers = {str(item["id"]): {"value": 5000} for item in page["items"]}
    assert api.post(f"/api/assignments/{page['id']}/submit/", {"answers": answers}, format="json").status_code == 403
    client.force_login(worker)
    assert (
        client.post(
            f"/work/{gated_project.slug}/{page['id']}/submit/", {f"value_{k}": "5000" for k in answers}
        ).status_code
        == 403
    )
    assert client.get(f"/work/{gated_project.slug}/")["Location"] == f"/qualify/{gated_project.slug}/"
    assert not Annotation.objects.filter(worker=worker).exists()


def test_no_worker_is_sent_to_the_qualification_test_when_no_work_is_left(gated_project, make_user, client):
    """A test takes unpaid time: a worker who has not passed it is sent to it only while work is left."""
    client.force_login(make_user("late"))
    assert client.get(f"/work/{gated_project.slug}/")["Location"] == f"/qualify/{gated_project.slug}/"
    Item.objects.filter(project=gated_project).update(status=Item.Status.DONE, claimable=False)
    told = client.get(f"/work/{gated_project.slug}/")
    assert told.status_code == 200 and told.templates[0].name == "annotation/no_work.html"


def test_qualification_page_passes_a_worker_through(gated_project, slider_test, make_user, client):
    worker = make_user("formuser")
    client.force_login(worker)
    page = client.get(f"/qualify/{gated_project.slug}/")
    assert page.status_code == 200 and len(page.context["items"]) == len(SLIDER_REFERENCES)
    form = {f"value_{item.id}": str(closest_position(item.reference)) for item in slider_test.items.all()}
    response = client.post(f"/qualify/{gated_project.slug}/", form)
    assert response["Location"] == f"/work/{gated_project.slug}/"


def test_gold_checks_are_hidden_and_suspend_inattentive_workers(make_project, import_rows, make_user):
    project = make_project("nli_label", items_per_page=2, redundancy=1, max_annotations=1)
    project.gold_rate, project.suspend_below, project.gold_min_checks = 1.0, 0.5, 2
    project.save()
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(10)])
    import io
    import json

    from dataset_io.services.importers import import_stream

    gold_rows = [
        {"id": f"g{i}", "premise": "A dog runs.", "hypothesis": f"An animal moves {i}.", "label": "entailment"}
        for i in range(4)
    ]
    import_stream(project, io.StringIO("".join(json.dumps(r) + "\n" for r in gold_rows)), "jsonl", purpose="gold")
    assert Item.objects.filter(project=project, is_gold=True, gold="e").count() == 4
    worker = make_user("careless")
    for _ in range(2):
        page = claim_page(project, worker)
        items = list(page.claims.select_related("item"))
        assert len(items) == 3 and sum(c.item.is_gold for c in items) == 1
        submit_page(page.pk, worker, {str(c.item_id): {"value": "c"} for c in items})
    status = WorkerStatus.objects.get(project=project, worker=worker)
    assert (status.gold_answered, status.gold_correct, status.suspended) == (2, 0, True)
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        claim_page(project, worker)
    # Gold items are never settled as data and stay out of the progress counts.
    assert not Item.objects.filter(is_gold=True, claimable=True).exists()


def test_prolific_entry_link_and_completion_code(make_project, import_rows, client):
    project = make_project("nli_label", items_per_page=5)
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    url = f"/enter/{project.slug}/?PROLIFIC_PID=abc123&STUDY_ID=st1&SESSION_ID=se1"
    page = client.get(url, follow=True)
    assert page.status_code == 200 and page.context["assignment"] is not None
    assignment = page.context["assignment"]
    item_id = assignment.claims.get().item_id
    client.post(f"/work/{project.slug}/{assignment.id}/submit/", {f"value_{item_id}": "e"})
    finished = client.get(f"/work/{project.slug}/", follow=True)  # no work left: on to the end page
    code = finished.context["code"]
    assert code and code in finished.content.decode()
    session = CrowdSession.objects.get()
    assert (session.platform, session.participant_id, session.completion_code) == ("prolific", "abc123", code)
    assert client.get(url, follow=True).context["code"] == code  # the same link again: same session


def test_mturk_entry_and_bad_links(make_project, import_rows, client):
    project = make_project("nli_label")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    preview = client.get(f"/enter/{project.slug}/?workerId=W1&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H")
    assert preview.status_code == 200 and preview.context["mturk_preview"] and not CrowdSession.objects.exists()
    assert client.get(f"/enter/{project.slug}/?foo=bar").status_code == 400
    assert client.get(f"/enter/{project.slug}/?PROLIFIC_PID=<script>").status_code == 400
    assert client.get(f"/enter/{project.slug}/?workerId=W1&assignmentId=A1&hitId=H1").status_code == 302
    assert CrowdSession.objects.get().platform == "mturk"


def test_adaptive_pages_favour_uncertain_items(make_project, import_rows, make_user):
    project = make_project("unli_slider", items_per_page=2, redundancy=3, max_annotations=3)
    project.adaptive = True
    project.save()
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(4)])
    first = make_user("first")
    positions = {}
    while (page := claim_page(project, first)) is not None:
        answers = {}
        for claim in page.claims.all():
            # items 0 and 1 get confident answers, items 2 and 3 uncertain ones
            positions[claim.item_id] = 0 if claim.item.example.source_id in ("0", "1") else 5000
            answers[str(claim.item_id)] = {"value": positions[claim.item_id]}
        submit_page(page.pk, first, answers)
    second_page = claim_page(project, make_user("second"))
    served = {claim.item.example.source_id for claim in second_page.claims.select_related("item__example")}
    assert served == {"2", "3"}
    assert adaptive_priority([0.5]) < adaptive_priority([0.0])


def test_scripted_crowd_gets_a_third_annotation_exactly_on_disagreement(make_project, import_rows, make_user):
    project = make_project("unli_slider", items_per_page=5)
    import_rows(project, [{"id": str(i), "premise": f"P{i % 5}", "hypothesis": f"H{i}"} for i in range(40)])
    rng = random.Random(7)
    planned = {item.id: [rng.randrange(0, 10001) for _ in range(3)] for item in Item.objects.filter(project=project)}
    crowd = [make_user(f"crowd{i}") for i in range(8)]
    progress = True
    while progress:
        progress = False
        for worker in crowd:
            page = claim_page(project, worker)
            if page is None:
                continue
            progress = True
            answers = {}
            for claim in page.claims.all():
                done = Annotation.objects.filter(item_id=claim.item_id).count()
                answers[str(claim.item_id)] = {"value": planned[claim.item_id][done]}
            submit_page(page.pk, worker, answers)
    for item in Item.objects.filter(project=project):
        first, second, third = planned[item.id]
        disagree = abs(first - second) > 2000
        stored = list(Annotation.objects.filter(item=item).order_by("id").values_list("raw", "value"))
        assert [raw["position"] for raw, _ in stored] == ([first, second, third] if disagree else [first, second])
        assert item.status == "done"
        assert item.aggregate == pytest.approx(median(value for _, value in stored))


def test_finishing_gives_back_the_open_page_and_needs_some_work(make_project, import_rows, client):
    project = make_project("nli_label", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(6)])
    first = client.get(f"/enter/{project.slug}/?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=x", follow=True).context[
        "assignment"
    ]
    refused = client.post(f"/done/{project.slug}/")
    assert refused.status_code == 302 and not CrowdSession.objects.get().completion_code
    ids = list(first.claims.values_list("item_id", flat=True))
    client.post(f"/work/{project.slug}/{first.id}/submit/", {f"value_{i}": "e" for i in ids})
    second = client.get(f"/work/{project.slug}/").context["assignment"]
    finished = client.post(f"/done/{project.slug}/")
    assert finished.status_code == 200 and finished.context["code"] == CrowdSession.objects.get().completion_code
    second.refresh_from_db()
    assert second.status == "released"
    assert client.get(f"/done/{project.slug}/").context["code"] == finished.context["code"]


def test_gold_atoms_without_a_reference_import_nothing(make_project, import_rows):
    from annotation.models import Atom
    from dataset_io.services.importers import ImportFileError, import_stream

    project = make_project("atom_validity")
    import_rows(project, [{"id": "a", "premise": "P", "hypothesis": "H"}])
    import io

    bad = '{"example_id": "a", "atoms": [{"text": "x", "validity": "valid"}, "y"]}\n'
    with pytest.raises(ImportFileError) as error:
        import_stream(project, io.StringIO(bad), "atoms", purpose="gold")
    assert error.value.errors[0][:2] == (1, "atoms[1].validity")
    assert not Atom.objects.exists() and not Item.objects.filter(is_gold=True).exists()
