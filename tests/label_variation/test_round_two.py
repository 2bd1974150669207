"""Round 2 that settles: a label-explanation study's validators per pair follow from its writers (every
other writer of the item, capped by a setting); a round 1 with too few writers is refused; a study's
redundancy change re-targets its open items, whatever the task type."""

import pytest
from django.test import Client

from annotation.models import Item, Project
from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import LinkError, report_tables, send_to_validation, writer_figures
from annotation.services.projects import update_project
from tests.label_variation.explanations import HYPOTHESIS, PREMISE, explained

pytestmark = pytest.mark.django_db


def write(project, writer, labels):
    page = claim_page(project, writer)
    (claim,) = page.claims.all()
    submit_page(page.pk, writer, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})


def judge_all(validation, validator, makes_sense=True):
    """The validator judges every pair a page gives them; returns how many."""
    page = claim_page(validation, validator)
    claims = list(page.claims.all()) if page is not None else []
    if claims:
        submit_page(page.pk, validator, {str(c.item_id): {"value": {"makes_sense": makes_sense}} for c in claims})
    return len(claims)


@pytest.fixture
def three_writers(make_project, import_rows, make_user):
    """Two pairs, each explained by the same three writers (redundancy 3), sent to validation."""
    project = make_project("label_explanation", slug="three", redundancy=3, max_annotations=3, items_per_page=1)
    import_rows(project, [{"id": f"p{n}", "premise": PREMISE, "hypothesis": f"{HYPOTHESIS} ({n})"} for n in (1, 2)])
    writers = [make_user(f"writer{n}", "worker") for n in range(3)]
    for writer in writers:
        for _ in range(2):
            write(project, writer, {"e": explained(f"{writer.username} reads the morning commute in this scene.")})
    send_to_validation(project)
    project.refresh_from_db()
    return project, writers


def test_with_three_writers_every_pair_gets_the_two_others_and_settles(three_writers):
    project, writers = three_writers
    validation = update_project(project.validation_project, items_per_page=10)
    assert validation.redundancy == 2  # every other writer of the item: 3 - 1
    assert set(validation.items.values_list("target", flat=True)) == {2}
    judged = [judge_all(validation, writer) for writer in writers]
    assert judged == [4, 4, 4]  # each judges the other two writers' pairs of both items, never their own
    assert set(validation.items.values_list("status", flat=True)) == {Item.Status.DONE}


def test_a_tie_of_validators_settles_the_pair_and_never_waits_for_adjudication(three_writers):
    """VariErr's rule reads the writers' self-checks, never an adjudicated judgment: a 1-1 tie settles."""
    project, writers = three_writers
    validation = update_project(project.validation_project, items_per_page=10)
    judge_all(validation, writers[0], makes_sense=True)
    # Half the pairs have one judgment: judged, not settled; every pair of the table counts.
    figures = {f["writer"]: f for f in writer_figures(project)}
    assert [(f["written"], f["sent"], f["judged"], f["validated"]) for f in figures.values()] == [
        (2, 2, 0, 0),
        (2, 2, 2, 0),
        (2, 2, 2, 0),
    ]
    judge_all(validation, writers[1], makes_sense=False)
    judge_all(validation, writers[2], makes_sense=True)
    statuses = dict(validation.items.values_list("example__origin__worker__username", "status").distinct())
    assert set(validation.items.values_list("status", flat=True)) == {Item.Status.DONE}, statuses
    assert not validation.items.filter(status=Item.Status.ADJUDICATION).exists()
    # writer0's pairs: judged yes by writer2 and no by writer1, a tie: validated, not confirmed.
    tied = validation.items.filter(example__origin__worker=writers[0])
    assert list(tied.values_list("aggregate", flat=True)) == [None, None]
    figures = {f["writer"]: (f["judged"], f["validated"], f["confirmed"]) for f in writer_figures(project)}
    assert figures == {"writer0": (2, 2, 0), "writer1": (2, 2, 2), "writer2": (2, 2, 0)}
    (table,) = report_tables(project)
    assert table["columns"][-1] == "Judged" and "Judged: the sent pairs with at least one" in table["note"]


def test_the_setting_caps_the_validators_per_pair(make_project, import_rows, make_user):
    project = make_project("label_explanation", slug="capped", redundancy=4, max_annotations=4)
    import_rows(project, [{"id": "p", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    write(project, make_user("w", "worker"), {"e": explained("Reading a newspaper on a train is a commute.")})
    update_project(project, max_validators_per_pair=2)
    send_to_validation(project)
    project.refresh_from_db()
    assert project.validation_project.redundancy == 2


def test_a_round_one_with_one_writer_per_item_is_refused_and_nothing_is_created(make_project, import_rows, make_user):
    project = make_project("label_explanation", slug="alone", redundancy=1, max_annotations=1)
    import_rows(project, [{"id": "p", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    write(project, make_user("w", "worker"), {"e": explained("Reading a newspaper on a train is a commute.")})
    with pytest.raises(LinkError) as error:
        send_to_validation(project)
    assert "round 2 needs at least 2 writers per item" in error.value.message
    assert error.value.field == "redundancy"
    project.refresh_from_db()
    assert project.validation_project is None
    assert not Project.objects.filter(slug__startswith="alone-validation").exists()


def test_the_study_page_says_how_many_writers_round_two_needs(make_project, author):
    project = make_project("label_explanation", slug="needs", redundancy=1, max_annotations=1)
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert "Round 2 needs at least 2 writers per item" in page
    assert "raise its redundancy before sending" in page
    update_project(project, redundancy=3, max_annotations=3)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert "Each pair gets 2 validators" in page


def test_lowering_the_writers_re_targets_the_open_pairs(three_writers, make_user):
    project, _ = three_writers
    validation = update_project(project.validation_project, items_per_page=10)
    assert judge_all(validation, make_user("outsider", "worker")) == 6  # one vote on each pair
    assert not validation.items.exclude(status=Item.Status.OPEN).exists()
    update_project(project, redundancy=2, max_annotations=3)  # 1 validator per pair now
    validation.refresh_from_db()
    assert validation.redundancy == 1
    assert set(validation.items.values_list("status", "target")) == {(Item.Status.DONE, 1)}


def test_a_redundancy_change_re_targets_open_items_of_any_task_type(make_project, import_rows, make_user):
    project = make_project("nli_label", slug="plain", redundancy=3, max_annotations=5, items_per_page=2)
    import_rows(
        project, [{"id": f"p{n}", "premise": "A dog runs.", "hypothesis": f"An animal moves {n}."} for n in (1, 2)]
    )
    for name in ("a", "b"):
        page = claim_page(project, make_user(name, "worker"))
        submit_page(page.pk, page.worker, {str(c.item_id): {"value": "e"} for c in page.claims.all()})
    assert set(project.items.values_list("target", "status")) == {(3, Item.Status.OPEN)}
    update_project(project, redundancy=2)
    assert set(project.items.values_list("target", "status")) == {(2, Item.Status.DONE)}
    assert set(project.items.values_list("aggregate", flat=True)) == {"e"}
    update_project(project, redundancy=4, max_annotations=5)
    assert set(project.items.values_list("target", flat=True)) == {2}  # settled items keep what they have


def test_the_settings_page_says_what_a_redundancy_change_does_before_saving(make_project, import_rows, author):
    project = make_project("nli_label", slug="shown", redundancy=3, max_annotations=5)
    import_rows(project, [{"id": "p", "premise": "A dog runs.", "hypothesis": "An animal moves."}])
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/settings/").content.decode()
    assert "A change applies to the 1 item still open" in page
