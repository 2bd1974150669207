"""Valid atoms of an atom validity study sent on to a defeasible atom study (annotation.services.atom_chain):
what counts as valid (the study's settled labels), what is left out and counted, sending again, a target
with answers, a target of the wrong type, who may send, and the same rule through the page, the API and
the command."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Atom, AuditEntry, Item, Project
from annotation.services.analysis import adjudication
from annotation.services.assignments import claim_page, submit_page
from annotation.services.atom_chain import ChainError, send_valid_atoms

pytestmark = pytest.mark.django_db

EXAMPLES = [
    {
        "id": "e1",
        "premise": "A man plays a guitar on stage.",
        "hypothesis": "A musician performs for a crowd.",
        "update": "The hall is empty.",
        "label": "weakener",
    },
    {
        "id": "e2",
        "premise": "A dog runs on the beach.",
        "hypothesis": "A pet is outside.",
        "update": "The dog has a collar with a tag.",
        "label": "strengthener",
    },
    {"id": "e3", "premise": "Two girls read a book.", "hypothesis": "Children are at school.", "label": "entailment"},
]
ATOMS = [
    {"example_id": "e1", "atoms": ["Someone is a musician.", "Someone performs.", "There is a crowd."]},
    {"example_id": "e2", "atoms": ["There is a pet.", "The pet is outside."]},
    {"example_id": "e3", "atoms": ["There are children.", "They are at school."]},
]
# Each atom's verdict from the first worker of a study that asks one (redundancy 1); the atoms in OPEN ask two
# answers, so they stay open after it.
VERDICTS = {
    "Someone is a musician.": "valid",
    "Someone performs.": "valid",
    "There is a crowd.": "invalid",
    "There is a pet.": "valid",
    "The pet is outside.": "valid",
    "There are children.": "valid",  # e3 has no update: left out
    "They are at school.": "invalid",
}
OPEN = ("The pet is outside.", "They are at school.")


@pytest.fixture
def validity(make_project, import_rows):
    project = make_project("atom_validity", "atoms-valid", redundancy=1, max_annotations=2, items_per_page=10)
    import_rows(project, EXAMPLES)
    import_rows(project, ATOMS, "atoms")
    Item.objects.filter(project=project, atom__text__in=OPEN).update(target=2)
    return project


def answer(project, worker, verdicts):
    """The worker's page (every item they may still answer), each answered as `verdicts` says of its atom."""
    page = claim_page(project, worker)
    claims = list(page.claims.select_related("item__atom"))
    submit_page(page.pk, worker, {str(claim.item_id): {"value": verdicts[claim.item.atom.text]} for claim in claims})


def items_of(project):
    return list(Item.objects.filter(project=project).select_related("example", "atom").order_by("id"))


def test_only_settled_valid_atoms_with_an_update_are_sent_the_rest_counted(validity, worker, make_project):
    answer(validity, worker, VERDICTS)
    target = make_project("defeasible_atom", "effects")
    report = send_valid_atoms(validity, to=target.slug)

    assert (report.valid, report.invalid, report.unsettled) == (4, 1, 2)
    assert (report.created, report.already_sent, report.no_update) == (3, 0, 1)
    sent = items_of(target)
    assert sorted(item.atom.text for item in sent) == ["Someone is a musician.", "Someone performs.", "There is a pet."]
    for item in sent:  # a defeasible item: premise, hypothesis, update, atom, open for the study's redundancy
        assert item.example.update in {"The hall is empty.", "The dog has a collar with a tag."}
        assert item.atom.validity == Atom.Validity.VALID
        assert (item.status, item.target, item.claimable) == (Item.Status.OPEN, target.redundancy, True)
    assert {item.example.source_label for item in sent} == {"weakener", "strengthener"}
    assert "2 not settled yet, 1 invalid, 1 valid but without an update" in report.summary()


def test_an_adjudicated_label_decides_and_a_tie_waits(make_project, import_rows, make_user, author):
    validity = make_project("atom_validity", "tied", redundancy=2, max_annotations=2, items_per_page=10)
    import_rows(validity, EXAMPLES[:1])
    import_rows(validity, ATOMS[:1], "atoms")
    answer(validity, make_user("w1"), dict.fromkeys(ATOMS[0]["atoms"], "valid"))
    Item.objects.filter(project=validity, atom__text="There is a crowd.").update(target=3)  # stays open
    answer(validity, make_user("w2"), {**dict.fromkeys(ATOMS[0]["atoms"], "valid"), "Someone performs.": "invalid"})
    tied = Item.objects.get(project=validity, atom__text="Someone performs.")
    assert tied.status == Item.Status.ADJUDICATION  # one valid, one invalid

    target = make_project("defeasible_atom", "effects")
    first = send_valid_atoms(validity, to=target.slug)
    assert (first.created, first.unsettled) == (1, 2)  # the tie and the atom with one answer of two

    adjudication.adjudicate(tied.pk, author, "valid", "reads as entailed by H")
    second = send_valid_atoms(validity, to=target.slug)
    assert (second.created, second.already_sent, second.unsettled) == (1, 1, 1)


def test_sending_again_adds_only_new_valid_atoms_and_keeps_the_targets_answers(
    validity, worker, make_user, make_project
):
    answer(validity, worker, VERDICTS)
    target = make_project("defeasible_atom", "effects", redundancy=1, max_annotations=1, items_per_page=10)
    send_valid_atoms(validity, to=target.slug)
    rater = make_user("rater")
    page = claim_page(target, rater)
    submit_page(page.pk, rater, {str(claim.item_id): {"value": 1} for claim in page.claims.all()})
    answered = {item.pk: item.final_value for item in items_of(target)}

    again = send_valid_atoms(validity, to=target.slug)
    assert (again.created, again.already_sent) == (0, 3)
    assert len(items_of(target)) == 3

    answer(validity, make_user("late"), VERDICTS)  # the open atoms settle: one valid, one invalid
    third = send_valid_atoms(validity, to=target.slug)
    assert (third.created, third.already_sent, third.unsettled, third.invalid) == (1, 3, 0, 2)
    after = items_of(target)
    assert len(after) == 4 and target.examples.count() == 2  # the new atom joins its example already there
    assert {item.pk: item.final_value for item in after if item.pk in answered} == answered


def test_a_target_that_imported_the_same_rows_meets_the_same_examples(validity, worker, make_project, import_rows):
    answer(validity, worker, VERDICTS)
    target = make_project("defeasible_atom", "effects")
    import_rows(target, EXAMPLES[:2])
    import_rows(target, [{"example_id": "e1", "atoms": [{"text": "Someone performs.", "effect": -1}]}], "atoms")

    report = send_valid_atoms(validity, to=target.slug)
    assert (report.created, report.already_sent) == (2, 1)
    assert target.examples.count() == 2
    kept = Atom.objects.get(example__project=target, text="Someone performs.")
    assert kept.effect == -1 and kept.validity == Atom.Validity.VALID  # unknown before: the study settled it


def test_a_target_example_with_other_texts_is_refused_and_nothing_is_stored(
    validity, worker, make_project, import_rows
):
    answer(validity, worker, VERDICTS)
    target = make_project("defeasible_atom", "effects")
    import_rows(target, [{**EXAMPLES[0], "update": "A different update."}])
    with pytest.raises(ChainError) as refused:
        send_valid_atoms(validity, to=target.slug)
    assert refused.value.field == "to" and "'e1'" in refused.value.message
    assert target.items.count() == 0 and target.examples.count() == 1
    assert not AuditEntry.objects.filter(action=AuditEntry.Action.LINK).exists()


def test_a_new_study_is_a_draft_of_the_author_open_to_the_same_workers(validity, worker, author):
    validity.members.add(worker)
    answer(validity, worker, VERDICTS)
    report = send_valid_atoms(validity, new_title="Effects of the updates", user=author)
    target = Project.objects.get(slug=report.target)
    assert report.new_study and target.slug == "effects-of-the-updates"
    assert (target.task_type, target.status, target.owner) == ("defeasible_atom", Project.Status.DRAFT, author)
    assert list(target.members.all()) == [worker]
    assert target.items.count() == report.created == 3
    entry = AuditEntry.objects.get(action=AuditEntry.Action.LINK)
    assert (entry.project, entry.actor, entry.details["target"]) == (validity, author, target.slug)
    assert entry.details["created"] == 3 and entry.details["unsettled"] == 2

    second = send_valid_atoms(validity, new_title="Effects of the updates", user=author)
    assert second.target == "effects-of-the-updates-2"  # a second new study, never the first refilled


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({}, "to"),
        ({"to": "effects", "new_title": "Both"}, "to"),
        ({"to": "nowhere"}, "to"),
        ({"to": "atoms-valid"}, "to"),
    ],
)
def test_a_missing_or_wrong_target_is_refused_naming_the_field(validity, make_project, kwargs, field):
    make_project("defeasible_atom", "effects")
    with pytest.raises(ChainError) as refused:
        send_valid_atoms(validity, **kwargs)
    assert refused.value.field == field
    assert Item.objects.filter(project__task_type="defeasible_atom").count() == 0


def test_the_wrong_target_type_says_which_type_is_wanted(validity, make_project):
    make_project("nli_label", "labels")
    with pytest.raises(ChainError, match="valid atoms go to a defeasible atom effect study"):
        send_valid_atoms(validity, to="labels")


def test_only_a_validity_study_sends(make_project):
    labels = make_project("nli_label", "labels")
    with pytest.raises(ChainError) as refused:
        send_valid_atoms(labels, to="effects")
    assert refused.value.field == "source"


def test_the_sender_must_manage_both_studies(validity, worker, make_user, make_project, author):
    answer(validity, worker, VERDICTS)
    other = make_user("author2", "author")
    theirs = make_project("defeasible_atom", "theirs", owner=other)
    with pytest.raises(ChainError, match="no study 'theirs' of yours"):
        send_valid_atoms(validity, to=theirs.slug, user=author)
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    with pytest.raises((PermissionDenied, Http404)):
        send_valid_atoms(validity, to=theirs.slug, user=other)
    assert theirs.items.count() == 0
    admin = make_user("boss", "admin")
    assert send_valid_atoms(validity, to=theirs.slug, user=admin).created == 3


# ---------------------------------------------------------------- the page, the API and the command


def test_the_page_shows_the_counts_and_sends(validity, worker, author, make_project):
    answer(validity, worker, VERDICTS)
    target = make_project("defeasible_atom", "effects")
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{validity.slug}/").content.decode()
    assert 'id="atom-chain"' in page and "<b>4</b> valid, 1 invalid" in page and "<b>2</b> not settled yet" in page
    assert f'value="{target.slug}"' in page

    sent = client.post(f"/projects/{validity.slug}/send-valid-atoms/", {"to": target.slug}, follow=True)
    text = sent.content.decode()
    assert "3 new valid atoms sent to effects (0 sent before)" in text
    assert target.items.count() == 3
    assert 'id="atom-chain-past"' in text and "3 sent to" in text  # the send is listed on the page

    refused = client.post(f"/projects/{validity.slug}/send-valid-atoms/", {"to": "", "new_title": ""}, follow=True)
    assert "Nothing was sent: name the defeasible study to fill" in refused.content.decode()


def test_other_study_pages_have_no_send_form(make_project, author):
    labels = make_project("nli_label", "labels")
    client = Client()
    client.force_login(author)
    assert 'id="atom-chain"' not in client.get(f"/projects/{labels.slug}/").content.decode()


def test_the_api_sends_and_refuses_in_the_documented_shape(validity, worker, author, make_project):
    answer(validity, worker, VERDICTS)
    make_project("nli_label", "labels")
    api = APIClient()
    api.force_authenticate(author)
    created = api.post(f"/api/projects/{validity.slug}/send-valid-atoms/", {"new_title": "Effects"}, format="json")
    assert created.status_code == 200, created.content
    assert created.json() == {
        "target": "effects",
        "target_title": "Effects",
        "new_study": True,
        "valid": 4,
        "created": 3,
        "already_sent": 0,
        "no_update": 1,
        "invalid": 1,
        "unsettled": 2,
    }
    again = api.post(f"/api/projects/{validity.slug}/send-valid-atoms/", {"to": "effects"}, format="json")
    assert (again.json()["created"], again.json()["already_sent"]) == (0, 3)
    wrong = api.post(f"/api/projects/{validity.slug}/send-valid-atoms/", {"to": "labels"}, format="json")
    assert wrong.status_code == 409 and wrong.json()["field"] == "to"  # the target is no defeasible study
    assert "defeasible atom effect study" in wrong.json()["detail"]


def test_the_command_sends_and_prints_the_counts(validity, worker, make_project):
    answer(validity, worker, VERDICTS)
    make_project("defeasible_atom", "effects")
    out = StringIO()
    call_command("send_valid_atoms", validity.slug, "--to", "effects", "--json", stdout=out)
    assert json.loads(out.getvalue())["created"] == 3
    out = StringIO()
    call_command("send_valid_atoms", validity.slug, "--to", "effects", stdout=out)
    assert out.getvalue().startswith("0 new valid atoms sent to effects (3 sent before); left out: 2 not settled yet")
    with pytest.raises(CommandError, match="valid atoms go to a defeasible atom effect study"):
        call_command("send_valid_atoms", validity.slug, "--to", validity.slug)
    out = StringIO()
    call_command("send_valid_atoms", validity.slug, "--new-title", "Fresh effects", "--json", stdout=out)
    made = json.loads(out.getvalue())
    assert made["new_study"] and Project.objects.get(slug=made["target"]).owner == validity.owner
