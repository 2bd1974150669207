"""The smaller defects of label-variation studies: "None of these" goes alone, reasons are shown by their
names, the imported release is named without a template slip, an explained-labels item's label is shown as
counts (not a Python dict), and the report describes the round-1 figure it shows."""

import io

import pytest
from django.test import Client

from annotation.services.assignments import claim_page, submit_page
from dataset_io.services.importers import import_stream
from label_variation.models import ReasonTag
from label_variation.services import reasons
from tests.label_variation.explanations import HYPOTHESIS, PREMISE, explained

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(make_project, import_rows):
    project = make_project("nli_label", slug="details", items_per_page=1)
    import_rows(project, [{"id": "1", "premise": "A dog runs.", "hypothesis": "An animal moves."}])
    return project


def page_of(client, project, item) -> str:
    return client.get(f"/projects/{project.slug}/adjudication/{item.pk}/").content.decode()


def test_none_of_these_goes_alone_and_a_page_naming_it_with_another_is_refused(labelled, author):
    item = labelled.items.get()
    with pytest.raises(reasons.ReasonError) as error:
        reasons.tag_item(item, author, ["N/A", "Lexical"])
    assert error.value.field == "reasons" and "None of these" in error.value.message
    assert not ReasonTag.objects.exists()
    client = Client()
    client.force_login(author)
    response = client.post(
        f"/projects/{labelled.slug}/adjudication/{item.pk}/reasons/",
        {"reasons": ["N/A", "Lexical"], "round": "1"},
        follow=True,
    )
    assert "None of these" in response.content.decode() and not ReasonTag.objects.exists()
    assert reasons.tag_item(item, author, ["N/A"]).reasons == ["N/A"]


def test_the_item_page_names_reasons_and_the_imported_release(shared_data, make_project, author):
    project = make_project("nli_label", slug="release-names")
    path = shared_data / "nli-disagreement-taxonomy" / "taxonomy_round1_release.jsonl"
    with path.open(encoding="utf-8") as release:
        first = release.readline()
    import_stream(project, io.StringIO(first), "taxonomy")
    item = project.items.get()
    reasons.tag_item(item, author, ["Probabilistic", "Interrogative."])
    client = Client()
    client.force_login(author)
    page = page_of(client, project, item)
    assert "section.taxonomy" not in page
    assert "Imported (taxonomy release, round 1)" in page
    assert "Interrogative hypothesis, Probabilistic enrichment" in page  # names, not the raw tags
    assert "<td>Interrogative., Probabilistic</td>" not in page


def test_an_explained_labels_item_shows_its_label_counts_not_a_dict(make_project, import_rows, make_user, author):
    project = make_project("label_explanation", slug="shown-label", redundancy=1, max_annotations=1)
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    writer = make_user("writer", "worker")
    page = claim_page(project, writer)
    (claim,) = page.claims.all()
    labels = {"e": explained("Reading a newspaper on a train is what commuters do.")}
    submit_page(page.pk, writer, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})
    client = Client()
    client.force_login(author)
    detail = client.get(f"/projects/{project.slug}/").content.decode()
    assert "Entailment 1, Neutral 0, Contradiction 0" in detail
    assert "{&#x27;e&#x27;" not in detail and "{'e'" not in detail


def test_the_report_describes_the_round_one_figure_it_shows(make_project, import_rows, make_user, author):
    project = make_project("label_explanation", slug="round-one-note", redundancy=1, max_annotations=1)
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    writer = make_user("writer", "worker")
    page = claim_page(project, writer)
    (claim,) = page.claims.all()
    labels = {
        "e": explained("Reading a newspaper on a train is what commuters do."),
        "n": explained("Nothing in the sentence says where the train is going."),
    }
    submit_page(page.pk, writer, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})
    client = Client()
    client.force_login(author)
    report = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "0.50 / 0.50 / 0.00" in report  # one annotator, two labels: each label half the pairs
    assert "each label&#x27;s share of the (annotator, label) pairs" in report
    assert "the share of annotators who gave each label" not in report
