"""Disagreement reasons: the taxonomy, two-round tagging with reconciliation, who may tag, the report, the API,
and the release's rule checked on the real taxonomy files."""

import json

import pytest
from django.core.exceptions import PermissionDenied
from rest_framework.test import APIClient

from annotation.models import Annotation
from annotation.services import quality
from annotation.services.assignments import claim_page, submit_page
from annotation.services.projects import update_project
from common.schema import SettingError
from label_variation.models import ReasonTag
from label_variation.services import reasons
from metrics.reasons import set_agreement

TAXONOMY_DIR = "nli-disagreement-taxonomy"


def release(shared_data, round_number):
    path = shared_data / TAXONOMY_DIR / f"taxonomy_round{round_number}_release.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def study(make_project, import_rows, make_user):
    """A published 3-way study of four pairs, one of them a tie waiting for adjudication."""
    project = make_project("nli_label", slug="reasons-study", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(3)])
    import_rows(
        project,
        [{"uid": "t", "example": {"premise": "P tie", "hypothesis": "H tie"}, "label_counter": {"e": 1, "n": 1}}],
        "chaosnli",
    )
    return project


def api(user):
    client = APIClient()
    client.force_login(user)
    return client


# ---------------------------------------------------------------------------- the taxonomy and the real files


def test_the_default_taxonomy_is_exactly_the_release_tags(shared_data):
    used = {
        tag
        for number in (1, 2)
        for row in release(shared_data, number)
        for name in ("a1", "a2", "reconciliation", "agg")
        for tag in row.get(name) or []
    }
    assert {entry["tag"] for entry in reasons.TACL_2022_TAXONOMY} == used
    assert "Interrogative." in used  # spelt as the release spells it, full stop and all


def test_the_release_rule_reproduces_agg_on_the_real_round_2_file(shared_data):
    rows = release(shared_data, 2)
    assert len(rows) == 110
    matched = sum(
        reasons.final_reasons(row["a1"], row["a2"], row["reconciliation"]) == frozenset(row["agg"]) for row in rows
    )
    assert matched == 110
    # Reconciliation is what decides where there is one; elsewhere the intersection, never the union.
    assert sum(row["reconciliation"] is not None for row in rows) == 4
    assert sum(set(row["a1"]) != set(row["a2"]) and row["reconciliation"] is None for row in rows) == 35
    agreement = set_agreement([row["a1"] for row in rows], [row["a2"] for row in rows], [])
    assert agreement["identical"] == pytest.approx(71 / 110)
    assert agreement["mean_kappa"] == pytest.approx(0.7293, abs=1e-4)
    assert agreement["kappa"]["Interrogative."] == pytest.approx(1.0)
    assert agreement["kappa"]["Implicature"] == pytest.approx(0.2094, abs=1e-4)


def test_set_agreement_scores_each_category_and_refuses_unpaired_units():
    result = set_agreement([{"a"}, {"a", "b"}, {"b"}, set()], [{"a"}, {"b"}, {"b"}, {"c"}], ["a", "b", "c", "d"])
    assert result["units"] == 4
    assert result["identical"] == 0.5
    assert result["kappa"]["b"] == pytest.approx(1.0)
    assert result["kappa"]["a"] == pytest.approx(0.5)  # observed 3/4, chance 1/2
    assert result["kappa"]["d"] is None  # nobody used it
    assert set(result["kappa"]) == {"a", "b", "c", "d"}
    with pytest.raises(ValueError, match="same units"):
        set_agreement([{"a"}], [], ["a"])


def test_the_taxonomy_is_a_study_setting(study, author):
    assert [entry["tag"] for entry in reasons.taxonomy(study)][:2] == ["Lexical", "Probabilistic"]
    custom = [{"tag": "Sarcasm", "description": "said with irony"}, {"tag": "Negation", "key": "g"}]
    update_project(study, changed_by=author, reason_taxonomy=custom)
    study.refresh_from_db()
    assert reasons.taxonomy(study) == [
        {"tag": "Sarcasm", "name": "Sarcasm", "description": "said with irony", "key": "1"},
        {"tag": "Negation", "name": "Negation", "description": "", "key": "g"},
    ]
    for bad, message in (
        ([], "non-empty list"),
        ([{"tag": "A"}, {"tag": "A"}], "listed twice"),
        ([{"tag": "A", "colour": "red"}], "unknown field 'colour'"),
        ([{"tag": "A", "key": "xy"}], "key must be one letter"),
    ):
        with pytest.raises(SettingError) as refused:
            update_project(study, changed_by=author, reason_taxonomy=bad)
        assert message in refused.value.errors["reason_taxonomy"]
    with pytest.raises(SettingError) as refused:
        update_project(study, changed_by=author, reason_taggers="everyone")
    assert "reason_taggers" in refused.value.errors


# ---------------------------------------------------------------------------- tagging


def test_two_taggers_then_a_reconciliation_settle_a_round(study, author, make_user):
    admin = make_user("root", "admin")
    item = study.items.order_by("id").first()
    first = reasons.tag_item(item, author, ["Probabilistic", "Lexical"], 1, "scalar 'some'")
    assert (first.role, first.reasons) == ("first", ["Lexical", "Probabilistic"])  # taxonomy order
    # Tagging again changes the same tag.
    assert reasons.tag_item(item, author, ["Lexical", "Probabilistic", "Implicature"]).pk == first.pk
    second = reasons.tag_item(item, admin, ["Lexical"])
    assert second.role == "second"
    shown = reasons.item_reasons(item, author)["rounds"][0]
    assert shown["final"] == ["Lexical"] and shown["needs_reconciliation"]
    reconciled = reasons.tag_item(item, admin, ["Lexical", "Implicature"], reconcile=True)
    assert reconciled.role == "reconciliation"
    shown = reasons.item_reasons(item, author)["rounds"][0]
    assert shown["final"] == ["Implicature", "Lexical"] and not shown["needs_reconciliation"]
    # A third tagger is refused in this round, welcome in round 2; round 2 is what the item now says.
    third = make_user("root2", "admin")
    with pytest.raises(reasons.ReasonError) as refused:
        reasons.tag_item(item, third, ["Temporal"])
    assert refused.value.field == "round"
    reasons.tag_item(item, third, ["Temporal"], round_number="2")
    (entry,) = [entry for entry in reasons.tagged_items(study) if entry.item_id == item.pk]
    assert entry.final == frozenset({"Temporal"})


def test_the_taxonomy_export_writes_the_rounds_tagged_here_in_the_release_shape(study, author, make_user):
    from dataset_io.formats import FORMATS, ExportOptions

    admin = make_user("root", "admin")
    first, second, untagged = study.items.order_by("id")[:3]
    reasons.tag_item(first, author, ["Probabilistic", "Lexical"])
    reasons.tag_item(first, admin, ["Lexical", "Temporal"])
    reasons.tag_item(first, admin, ["Temporal"], reconcile=True)
    reasons.tag_item(second, author, ["Coreference"])
    text = "".join(FORMATS["taxonomy"].write(study, ExportOptions()))
    rows = {row["premise"]: row for row in map(json.loads, text.splitlines())}
    assert untagged.example.premise not in rows  # no tags, no answers: left out unless asked for
    assert rows["P0"]["a1"] == ["Lexical", "Probabilistic"] and rows["P0"]["a2"] == ["Lexical", "Temporal"]
    assert rows["P0"]["reconciliation"] == ["Temporal"] and rows["P0"]["agg"] == ["Temporal"]
    assert rows["P1"]["a1"] == ["Coreference"] and "a2" not in rows["P1"]
    assert not list(FORMATS["taxonomy"].validate(iter(text.splitlines(keepends=True))))


def test_refusals_store_nothing_and_name_what_is_wrong(study, author):
    item = study.items.order_by("id").first()
    for given, field, message in (
        (["Lexical", "Sarcasm"], "reasons", "unknown reason 'Sarcasm'"),
        ([], "reasons", "at least one"),
        ("Lexical", "reasons", "must be a list"),
    ):
        with pytest.raises(reasons.ReasonError) as refused:
            reasons.tag_item(item, author, given)
        assert (refused.value.field, message in refused.value.message) == (field, True)
    with pytest.raises(reasons.ReasonError) as refused:
        reasons.tag_item(item, author, ["Lexical"], round_number=3)
    assert refused.value.field == "round"
    with pytest.raises(reasons.ReasonError) as refused:
        reasons.tag_item(item, author, ["Lexical"], note="x" * 2001)
    assert refused.value.field == "note"
    with pytest.raises(reasons.ReasonError) as refused:
        reasons.tag_item(item, author, ["Lexical"], reconcile=True)
    assert refused.value.field == "reconcile"
    assert not ReasonTag.objects.exists()


def test_who_tags_follows_the_setting(study, author, worker, make_user):
    ordinary, tie = study.items.filter(status="open").order_by("id").first(), study.items.get(status="adjudication")
    # authors (the default): workers may not tag, even items they answered.
    page = claim_page(study, worker)
    submit_page(page.pk, worker, {str(claim.item_id): {"value": "n"} for claim in page.claims.all()})
    answered = page.claims.order_by("item_id").first().item
    with pytest.raises(PermissionDenied):
        reasons.tag_item(answered, worker, ["Lexical"])
    # adjudicators: the author tags only what went to adjudication.
    update_project(study, changed_by=author, reason_taggers="adjudicators")
    answered.project.refresh_from_db()
    ordinary.project = tie.project = answered.project
    with pytest.raises(PermissionDenied, match="adjudication"):
        reasons.tag_item(ordinary, author, ["Lexical"])
    assert reasons.tag_item(tie, author, ["Coreference"]).role == "first"
    # workers: a worker tags what they answered, in round 1, as role "worker"; never what they did not answer.
    update_project(study, changed_by=author, reason_taggers="workers")
    answered.project.refresh_from_db()
    assert reasons.tag_item(answered, worker, ["Lexical"]).role == "worker"
    with pytest.raises(reasons.ReasonError):
        reasons.tag_item(answered, worker, ["Lexical"], round_number=2)
    other = study.items.exclude(pk__in=page.claims.values("item_id")).filter(status="open").first()
    other.project = answered.project
    with pytest.raises(PermissionDenied, match="answered"):
        reasons.tag_item(other, worker, ["Lexical"])
    assert ReasonTag.objects.filter(tagger=worker).count() == 1


def test_a_blocked_worker_cannot_tag_reasons_and_nothing_is_stored(study, author, worker):
    update_project(study, changed_by=author, reason_taggers="workers")
    page = claim_page(study, worker)
    submit_page(page.pk, worker, {str(claim.item_id): {"value": "n"} for claim in page.claims.all()})
    answered = page.claims.order_by("item_id").first().item
    quality.block(study, worker, author, reason="random clicking")
    with pytest.raises(PermissionDenied, match="blocked"):
        reasons.tag_item(answered, worker, ["Lexical"])
    assert not ReasonTag.objects.filter(tagger=worker).exists()
    response = api(worker).post(
        f"/api/v1/projects/{study.slug}/items/{answered.pk}/reasons/", {"reasons": ["Lexical"]}, format="json"
    )
    assert response.status_code == 403 and "blocked" in response.json()["detail"]
    assert not ReasonTag.objects.filter(tagger=worker).exists()


def test_workers_majority_is_the_round_result_when_no_one_else_tagged():
    assert reasons.final_reasons(None, None, None, [{"a", "b"}, {"a"}, {"b", "c"}]) == frozenset({"a", "b"})
    assert reasons.final_reasons(None, None, None, [{"a"}, {"b"}]) == frozenset()
    assert reasons.final_reasons(None, None, None, []) is None
    assert reasons.final_reasons({"a"}, None) == frozenset({"a"})  # one tagger so far


# ---------------------------------------------------------------------------- API, pages, report


def test_api_tags_and_reads_an_items_reasons(study, author, worker):
    item = study.items.order_by("id").first()
    path = f"/api/v1/projects/{study.slug}/items/{item.pk}/reasons/"
    refused = api(author).post(path, {"reasons": ["Lexical", "Irony"]}, format="json")
    assert refused.status_code == 400
    assert refused.json()["field"] == "reasons" and "'Irony'" in refused.json()["detail"]
    assert not ReasonTag.objects.exists()
    stored = api(author).post(path, {"reasons": ["Lexical"], "note": "hum vs vibrate"}, format="json")
    assert stored.status_code == 201
    assert stored.json()["rounds"][0]["tags"][0] | {"tagger": None} == {
        "role": "first",
        "tagger": None,
        "reasons": ["Lexical"],
        "names": ["Lexical"],
        "note": "hum vs vibrate",
        "mine": True,
    }
    assert api(author).get(path).json()["rounds"][0]["final"] == ["Lexical"]
    # A worker in a study whose managers tag: 403 for both reading and tagging, nothing stored.
    assert api(worker).post(path, {"reasons": ["Lexical"]}, format="json").status_code == 403
    assert api(worker).get(path).status_code == 403
    assert ReasonTag.objects.count() == 1
    gold_or_foreign = f"/api/v1/projects/{study.slug}/items/999999/reasons/"
    assert api(author).get(gold_or_foreign).status_code == 404


def test_item_page_tags_with_htmx_and_the_report_counts(study, author, client):
    client.force_login(author)
    empty = client.get(f"/projects/{study.slug}/report/")
    assert "No item has reasons yet" in empty.content.decode()
    first, second = study.items.order_by("id")[:2]
    page = client.get(f"/projects/{study.slug}/adjudication/{first.pk}/").content.decode()
    assert 'data-key="l"' in page and "Probabilistic enrichment" in page
    url = f"/projects/{study.slug}/adjudication/{first.pk}/reasons/"
    swapped = client.post(url, {"reasons": ["Lexical", "Temporal"], "round": "1"}, HTTP_HX_REQUEST="true")
    assert swapped.status_code == 200
    assert "Reasons saved." in swapped.content.decode() and "<html" not in swapped.content.decode()
    refused = client.post(url, {"reasons": ["Nope"]}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and "unknown reason &#x27;Nope&#x27;" in refused.content.decode()
    plain = client.post(f"/projects/{study.slug}/adjudication/{second.pk}/reasons/", {"reasons": ["Lexical"]})
    assert plain.status_code == 302
    report = client.get(f"/projects/{study.slug}/report/").content.decode()
    section = report[report.index('id="disagreement-reasons"') :]
    assert "2 items carry reasons" in section
    lexical = section[section.index('<th scope="row">Lexical') :]
    assert lexical.split("<td>")[1].startswith("2<")  # two items carry Lexical
    assert f"Item {first.pk}</a>" in lexical


def test_report_counts_reasons_and_agreement_per_round(study, author, make_user):
    admin = make_user("root", "admin")
    items = list(study.items.order_by("id")[:3])
    reasons.tag_item(items[0], author, ["Lexical", "Probabilistic"])
    reasons.tag_item(items[0], admin, ["Lexical"])
    reasons.tag_item(items[1], author, ["Coreference"])
    reasons.tag_item(items[1], admin, ["Coreference"])
    reasons.tag_item(items[2], author, ["Temporal"], round_number=2)
    report = reasons.reasons_report(study)
    counts = {entry["tag"]: entry["items"] for entry in report["reasons"]}
    assert report["items"] == 3 and report["imported_items"] == 0
    assert (counts["Lexical"], counts["Coreference"], counts["Temporal"], counts["Probabilistic"]) == (1, 1, 1, 0)
    assert report["reasons"][-1]["items"] == 0
    round_1, round_2 = report["rounds"]
    assert round_1["agreement"]["units"] == 2 and round_1["agreement"]["identical"] == 0.5
    assert round_2["items"] == 1 and round_2["agreement"] is None
    assert report["release_rule"] is None


def test_an_imported_release_shows_its_counts(make_project, import_rows, shared_data, author, client):
    project = make_project("nli_label", slug="release")
    rows = release(shared_data, 2)
    import_rows(project, rows, "taxonomy")
    report = reasons.reasons_report(project)
    assert report["items"] == report["imported_items"] == 110
    assert report["release_rule"] == {"checked": 110, "matched": 110}
    expected = {}
    for row in rows:
        for tag in row["agg"]:
            expected[tag] = expected.get(tag, 0) + 1
    assert {entry["tag"]: entry["items"] for entry in report["reasons"] if entry["items"]} == expected
    (round_2,) = report["rounds"]
    assert round_2["reconciled"] == 4
    assert round_2["agreement"]["identical"] == pytest.approx(71 / 110)
    # The item page shows the release's tags; a round tagged here replaces the release's for that round.
    item = project.items.get(example__source_id="103482e")  # a1 Lexical+Probabilistic, a2 Lexical, agg Lexical
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/adjudication/{item.pk}/").content.decode()
    assert "a1 Lexical, Probabilistic enrichment; a2 Lexical; result Lexical." in page  # names, not tags
    reasons.tag_item(item, author, ["Temporal"], round_number=2)
    (entry,) = [entry for entry in reasons.tagged_items(project) if entry.item_id == item.pk]
    assert entry.final == frozenset({"Temporal"}) and entry.rounds[2].second is None
    assert project.items.get(pk=item.pk).example.source_data["a1"] == ["Lexical", "Probabilistic"]  # kept verbatim


# ---------------------------------------------------------------------------- workers tag with their answers


def workers_tag(study, author):
    update_project(study, changed_by=author, reason_taggers="workers")
    study.refresh_from_db()
    return study


def test_a_page_submitted_with_reasons_stores_the_workers_tags(study, author, worker):
    workers_tag(study, author)
    page = claim_page(study, worker)
    first, second = page.claims.order_by("item_id").values_list("item_id", flat=True)
    answers = {
        str(first): {"value": "n", "reasons": ["Temporal", "Lexical", "Lexical"]},
        str(second): {"value": "e", "reasons": []},  # ticked nothing: no tag
    }
    response = api(worker).post(f"/api/v1/assignments/{page.pk}/submit/", {"answers": answers}, format="json")
    assert response.status_code == 200, response.content
    (tag,) = ReasonTag.objects.all()
    assert (tag.item_id, tag.tagger, tag.round, tag.role) == (first, worker, 1, "worker")
    assert tag.reasons == ["Lexical", "Temporal"]  # taxonomy order, once each
    # One worker who tagged is the round's majority: the report counts the item.
    report = reasons.reasons_report(study)
    assert {entry["tag"]: entry["items"] for entry in report["reasons"] if entry["items"]} == {
        "Lexical": 1,
        "Temporal": 1,
    }


def test_an_unknown_reason_refuses_the_whole_page(study, author, worker):
    workers_tag(study, author)
    page = claim_page(study, worker)
    first, second = page.claims.order_by("item_id").values_list("item_id", flat=True)
    answers = {str(first): {"value": "n", "reasons": ["Lexical"]}, str(second): {"value": "e", "reasons": ["Irony"]}}
    refused = api(worker).post(f"/api/v1/assignments/{page.pk}/submit/", {"answers": answers}, format="json")
    assert refused.status_code == 409  # a list of texts, as the schema says, but not of the study's taxonomy
    assert refused.json()["field"] == f"answers[{second}].reasons"
    assert "unknown reason 'Irony'" in refused.json()["detail"]
    for bad in ("Lexical", [3]):
        answers[str(second)]["reasons"] = bad
        refused = api(worker).post(f"/api/v1/assignments/{page.pk}/submit/", {"answers": answers}, format="json")
        assert refused.status_code == 400 and refused.json()["field"] == f"answers[{second}].reasons"
    assert not ReasonTag.objects.exists() and not Annotation.objects.filter(worker=worker).exists()
    page.refresh_from_db()
    assert page.status == "open"


def test_reasons_are_refused_where_workers_do_not_tag(study, worker):
    page = claim_page(study, worker)  # the default: the author and admins tag
    answers = {str(claim.item_id): {"value": "n", "reasons": ["Lexical"]} for claim in page.claims.all()}
    refused = api(worker).post(f"/api/v1/assignments/{page.pk}/submit/", {"answers": answers}, format="json")
    assert refused.status_code == 409  # the study's setting, not the body's shape
    assert refused.json()["field"].endswith("].reasons")
    assert "does not ask workers for disagreement reasons" in refused.json()["detail"]
    assert not ReasonTag.objects.exists() and not Annotation.objects.filter(worker=worker).exists()
    # Without reasons (or with an empty list) the same page goes through.
    for answer in answers.values():
        answer["reasons"] = []
    sent = api(worker).post(f"/api/v1/assignments/{page.pk}/submit/", {"answers": answers}, format="json")
    assert sent.status_code == 200 and not ReasonTag.objects.exists()


def test_the_work_page_offers_the_reasons_and_sends_them_with_the_answers(study, author, worker, client):
    client.force_login(worker)
    assert "work-reasons" not in client.get(f"/work/{study.slug}/").content.decode()  # authors tag here
    workers_tag(study, author)
    html = client.get(f"/work/{study.slug}/").content.decode()
    page = study.assignments.get(worker=worker)
    first, second = page.claims.order_by("item_id").values_list("item_id", flat=True)
    assert "Why might people disagree here?" in html
    assert f'name="reasons_{first}" value="Interrogative."' in html
    assert "data-key" not in html[html.index('class="work-reasons"') :].split("</details>")[0]  # Tab and Space only
    url = f"/work/{study.slug}/{page.pk}/submit/"
    refused = client.post(url, {f"value_{first}": "n", f"value_{second}": "e", f"reasons_{second}": ["Nope"]})
    assert refused.status_code == 400
    assert f'data-field="answers[{second}].reasons"' in refused.content.decode()
    assert not ReasonTag.objects.exists()
    sent = client.post(
        url, {f"value_{first}": "n", f"value_{second}": "e", f"reasons_{second}": ["Coreference", "Lexical"]}
    )
    assert sent.status_code == 302
    (tag,) = ReasonTag.objects.all()
    assert (tag.item_id, tag.reasons, tag.role) == (second, ["Lexical", "Coreference"], "worker")


def test_a_draft_keeps_the_ticked_reasons(study, author, worker, client):
    workers_tag(study, author)
    client.force_login(worker)
    client.get(f"/work/{study.slug}/")
    page = study.assignments.get(worker=worker)
    item_id = page.claims.order_by("item_id").first().item_id
    url = f"/work/{study.slug}/{page.pk}/draft/"
    draft = {"answers": {str(item_id): {"value": "n", "reasons": ["Lexical"]}}}
    assert client.post(url, draft, content_type="application/json").status_code == 200
    assert '"reasons": ["Lexical"]' in client.get(f"/work/{study.slug}/").content.decode()
    bad = {"answers": {str(item_id): {"reasons": "Lexical"}}}
    refused = client.post(url, bad, content_type="application/json")
    assert refused.status_code == 400 and refused.json()["field"] == f"answers[{item_id}].reasons"


def test_reasons_sent_with_a_gold_check_are_checked_but_not_kept(study, author, worker):
    """The page shows the reasons with every item alike (a worker cannot tell the gold checks); a gold item's
    reasons are checked like the others' and then dropped, as tag_item refuses to tag gold items."""
    workers_tag(study, author)
    item = study.items.order_by("id").first()
    item.is_gold = True
    assert reasons.page_tags(study, worker, [item], {str(item.pk): {"value": "n", "reasons": ["Lexical"]}}) == []
    with pytest.raises(reasons.ReasonError) as refused:
        reasons.page_tags(study, worker, [item], {str(item.pk): {"value": "n", "reasons": ["Irony"]}})
    assert refused.value.field == f"answers[{item.pk}].reasons"
