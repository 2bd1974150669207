"""The stability redundancy strategy through real submits, its settings, and the budget planner."""

import pytest
from django.test import Client

from annotation.models import Item
from annotation.services.assignments import claim_page, submit_page
from annotation.services.crowd import budget
from annotation.services.projects import update_project
from common.schema import SettingError
from metrics.stability import expected_error, labels_to_decide_majority, labels_to_settle

pytestmark = pytest.mark.django_db

THRESHOLD = 0.25


@pytest.fixture
def stability_project(make_project, import_rows):
    project = make_project(
        "nli_label",
        slug="stable",
        items_per_page=1,
        redundancy=2,
        max_annotations=7,
        redundancy_strategy="stability",
        stability_threshold=THRESHOLD,
    )
    import_rows(project, [{"id": "1", "premise": "A dog runs.", "hypothesis": "An animal moves."}])
    return project


def answer_until_closed(project, make_user, labels):
    """Workers answer the one item in turn, each with the next label; returns the item's state after each."""
    states = []
    for number, label in enumerate(labels, start=1):
        worker = make_user(f"w{number}")
        page = claim_page(project, worker)
        if page is None:
            break
        submit_page(page.pk, worker, {str(page.claims.get().item_id): {"value": label}})
        item = Item.objects.get(project=project)
        states.append((item.annotation_count, item.status, item.claimable))
    return states


def test_unanimous_answers_close_the_item_once_its_distribution_is_stable(stability_project, make_user):
    states = answer_until_closed(stability_project, make_user, ["e"] * 7)
    stable_at = next(n for n in range(2, 8) if expected_error([[n, 0, 0]])[0] <= THRESHOLD)
    assert 2 < stable_at < 7  # the case tests the rule, not a bound
    assert [count for count, _, _ in states] == list(range(1, stable_at + 1))
    assert all(status == Item.Status.OPEN and claimable for _, status, claimable in states[:-1])
    assert states[-1][1:] == (Item.Status.DONE, False)
    assert Item.objects.get(project=stability_project).aggregate == "e"


def test_answers_that_keep_disagreeing_stop_at_the_maximum(stability_project, make_user):
    update_project(stability_project, stability_threshold=0.1)
    labels = ["e", "n", "c", "e", "n", "c", "e", "n"]
    prefixes = [[labels[:n].count(label) for label in "enc"] for n in range(2, 7)]
    assert (expected_error(prefixes) > 0.1).all()  # never stable before the maximum of 7
    states = answer_until_closed(stability_project, make_user, labels)
    assert [count for count, _, _ in states] == list(range(1, 8))
    assert states[-1][1] == Item.Status.DONE


def test_the_default_strategy_stops_agreeing_items_at_the_redundancy(make_project, import_rows, make_user):
    project = make_project("nli_label", items_per_page=1, redundancy=2, max_annotations=7)
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    states = answer_until_closed(project, make_user, ["e"] * 4)
    assert [count for count, _, _ in states] == [1, 2] and states[-1][1] == Item.Status.DONE


@pytest.mark.parametrize(
    "task_type, given, field, message",
    [
        ("nli_label", {"redundancy_strategy": "sometimes"}, "redundancy_strategy", "one of disagreement, stability"),
        ("nli_label", {"decided_within": 0}, "decided_within", "at least 1"),
        ("nli_label", {"stability_threshold": "0.9"}, "stability_threshold", "at most 0.5"),
        ("nli_label", {"stability_threshold": "nan"}, "stability_threshold", "finite"),
        ("atom_validity", {"stability_threshold": 0}, "stability_threshold", "at least 0.01"),
        ("unli_slider", {"redundancy_strategy": "stability"}, "redundancy_strategy", "is not a setting here"),
    ],
)
def test_bad_strategy_settings_are_refused_naming_the_setting(make_project, task_type, given, field, message):
    with pytest.raises(SettingError) as refused:
        make_project(task_type, **given)
    assert message in refused.value.errors[field]


def test_a_running_study_may_switch_to_the_stability_strategy(make_project):
    project = make_project("atom_validity")
    update_project(project, redundancy_strategy="stability", stability_threshold=0.1)
    project.refresh_from_db()
    for valid in (2, 3, 50):
        unstable = bool(expected_error([[valid, 0]])[0] > 0.1)  # labels in the task's order: valid, invalid
        assert project.task.disagree([], ["valid"] * valid, project.options) is unstable
    assert project.task.disagree([], ["valid", "valid"], project.options)  # two alike are not yet known


def test_the_planner_reads_the_pilots_disagreement(make_project, import_rows, make_user):
    project = make_project("nli_label", slug="plan", items_per_page=3, redundancy=2, max_annotations=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(6)])
    assert budget.plan(project, 0.15) is None  # no pilot yet
    for number, labels in enumerate((["e", "e", "c"], ["n", "e", "c"]), start=1):
        worker = make_user(f"pilot{number}")
        page = claim_page(project, worker)
        claims = page.claims.order_by("position")
        submit_page(page.pk, worker, {str(c.item_id): {"value": v} for c, v in zip(claims, labels, strict=True)})
    plan = budget.plan(project, 0.15, price_per_label=0.12)
    # the pilot: three items answered twice, as [e, n], [e, e], [c, c] in e/n/c order
    needed = labels_to_settle([[1, 1, 0], [2, 0, 0], [0, 0, 2]], 0.15, minimum=2, maximum=100)
    assert plan.pilot_items == 3 and plan.items == 6 and plan.labels_collected == 6
    assert plan.labels_per_item == round(needed.mean(), 2)
    assert plan.labels_total == round(needed.mean() * 6) and plan.labels_to_go == plan.labels_total - 6
    assert plan.cost_total == round(plan.labels_total * 0.12, 2)
    assert budget.plan(project, 0.3).labels_per_item < plan.labels_per_item
    assert budget.plan(project, 0.15).cost_total is None
    # Majority-decided stopping within 5 labels, exact over the pilot's three distributions.
    decided = labels_to_decide_majority([[1, 1, 0], [2, 0, 0], [0, 0, 2]], 5)
    assert plan.decided_within == 5 and plan.majority_decided_labels_per_item == round(decided.mean(), 2)
    assert plan.majority_decided_labels_per_item < 5


def test_majority_decided_stops_once_the_majority_of_five_is_settled(make_project, import_rows, make_user):
    project = make_project(
        "nli_label", items_per_page=1, redundancy=3, max_annotations=5, redundancy_strategy="majority_decided"
    )
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    # e, e, e: the majority of 5 cannot change after 3.
    states = answer_until_closed(project, make_user, ["e", "e", "e", "n", "n"])
    assert [count for count, _, _ in states] == [1, 2, 3] and states[-1][1] == Item.Status.DONE
    assert project.task.disagree([], ["e", "n", "e"], project.options)  # 2-1 after 3: two more could tie it
    assert not project.task.disagree([], ["e", "n", "e", "e"], project.options)  # 3-1 with one to come
    update_project(project, decided_within=3)
    project.refresh_from_db()
    assert not project.task.disagree([], ["e", "n", "e"], project.options)  # within 3, 2-1 is final


def test_the_planner_on_the_study_page(make_project, import_rows, author):
    project = make_project("nli_label", slug="plan-page")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H", "label": "e"}])
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert 'id="budget-form"' in page and 'id="budget-plan"' not in page
    asked = client.get(f"/projects/{project.slug}/", {"target_error": "0.2", "price_per_label": ""})
    assert "No item has two answers yet" in asked.content.decode()
    refused = client.get(f"/projects/{project.slug}/", {"target_error": "2", "price_per_label": "-1"})
    text = refused.content.decode()
    assert "must be at most 0.5" in text and "must be at least 0" in text and 'id="budget-plan"' not in text


def test_no_planner_for_a_slider_study(make_project, author):
    project = make_project("unli_slider")
    client = Client()
    client.force_login(author)
    assert 'id="budget-form"' not in client.get(f"/projects/{project.slug}/").content.decode()
