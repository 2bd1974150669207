"""Hypothesis writing: answer validation, imports of premises, sending to a linked validation project, the
writer kept from validating their own sentences, SNLI's 3-of-5 verdicts, the writer report and exports."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation, Example, Project
from annotation.services.analysis.agreement import project_agreement, project_report
from annotation.services.answers import SubmissionError
from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import LinkError, send_to_validation, writer_figures
from annotation.services.projects import update_project
from annotation.tasktypes import AnswerError, get_task_type
from common.schema import SettingError
from dataset_io.services import exporters
from dataset_io.services.importers import import_stream
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db

TASK = get_task_type("hypothesis_writing")
OPTIONS = TASK.default_options()
KITE = "A boy in a yellow raincoat flies a kite on a windy beach."
GOOD = {"e": "A child is outdoors.", "n": "The boy is on holiday with his aunt.", "c": "The boy is asleep in his bed."}


def parse(value, **options):
    return TASK.parse_answer({"value": value}, {**OPTIONS, **options})


# ---------------------------------------------------------------- answer validation


def test_a_written_set_is_stored_tidied():
    raw, value = parse({"e": "  A child   is\noutdoors. ", "n": GOOD["n"], "c": GOOD["c"]})
    assert value == raw == {**GOOD, "e": "A child is outdoors."}


@pytest.mark.parametrize(
    "value, field, words",
    [
        ("a sentence", "value", "one sentence for each of entailed, neutral, contradicted"),
        ({"e": GOOD["e"], "n": GOOD["n"]}, "value.c", "Contradicted: write a sentence"),
        ({**GOOD, "x": "Another one here."}, "value.x", "is not a target here"),
        ({**GOOD, "n": "Boy there."}, "value.n", "Neutral: 2 words; write at least 3"),
        ({**GOOD, "c": " ".join(["word"] * 31)}, "value.c", "Contradicted: 31 words; write at most 30"),
        ({**GOOD, "e": "Abcdefghijklm " * 20}, "value.e", "Entailed: 279 characters; write at most 250"),
        ({**GOOD, "n": "A boy\x00 is here."}, "value.n", "control character"),
        ({**GOOD, "c": ["not", "text"]}, "value.c", "Contradicted: write a sentence"),
    ],
)
def test_bad_sets_are_refused_naming_the_target(value, field, words):
    with pytest.raises(AnswerError) as error:
        parse(value)
    assert error.value.field == field and words in error.value.message


def test_the_same_sentence_twice_on_one_item_is_refused():
    with pytest.raises(AnswerError) as error:
        parse({**GOOD, "c": "a child is OUTDOORS"})  # case and punctuation do not make it another sentence
    assert error.value.field == "value.c"
    assert "the same sentence as the entailed one" in error.value.message


def test_length_limits_are_settings():
    parse({**GOOD, "n": "Boy there."}, min_words=2)
    with pytest.raises(AnswerError, match="at most 4"):
        parse(GOOD, max_words=4)


def test_min_words_above_max_words_is_refused(make_project):
    with pytest.raises(SettingError) as error:
        make_project("hypothesis_writing", min_words=10, max_words=5)
    assert error.value.errors == {"max_words": "must be at least min_words (10)"}


# ---------------------------------------------------------------- the writing project


@pytest.fixture
def writing(make_project, import_rows):
    project = make_project("hypothesis_writing", slug="writing", items_per_page=1)
    import_rows(project, [{"id": "kite", "premise": KITE}])
    return project


def write(project, worker, sentences):
    page = claim_page(project, worker)
    assert page is not None
    item_id = page.claims.get().item_id
    return submit_page(page.pk, worker, {str(item_id): {"value": sentences}})


@pytest.mark.parametrize(
    "sentences, field, message",
    [
        ({**GOOD, "n": KITE}, "value.n", "Neutral: this repeats the premise"),
        ({**GOOD, "n": "a boy in a yellow raincoat flies a kite on the windy beach"}, "value.n", "repeats the premise"),
    ],
)
def test_a_copy_of_the_premise_is_refused_and_nothing_is_stored(writing, worker, sentences, field, message):
    page = claim_page(writing, worker)
    item_id = page.claims.get().item_id
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, worker, {str(item_id): {"value": sentences}})
    assert error.value.field == f"answers[{item_id}].{field}" and message in error.value.message
    assert not Annotation.objects.exists()


def test_a_sentence_already_written_for_the_premise_is_refused(writing, make_user):
    update_project(writing, redundancy=2, max_annotations=2)
    writing.items.update(target=2, claimable=True)
    write(writing, make_user("first", "worker"), GOOD)
    second = make_user("second", "worker")
    with pytest.raises(SubmissionError) as error:
        write(writing, second, {**GOOD, "e": "A child is outdoors!", "n": "It is a warm day."})
    assert error.value.field.endswith(".value.e") and "already written for this premise" in error.value.message
    result = write(
        writing, second, {"e": "Someone holds a string.", "n": "It is a warm day.", "c": "The beach is empty."}
    )
    assert result.created == 1


def test_a_premise_is_done_with_its_redundancy_of_written_sets(writing, worker):
    write(writing, worker, GOOD)
    item = writing.items.get()
    assert (item.status, item.aggregate, item.annotation_count) == ("done", None, 1)


# ---------------------------------------------------------------- imports


def test_snli_rows_import_one_premise_each(make_project, shared_data):
    project = make_project("hypothesis_writing")
    lines = (
        (shared_data / "snli" / "partial_original_format" / "snli_1.0_dev.partial.jsonl")
        .read_text()
        .splitlines(True)[:30]
    )
    premises = list(dict.fromkeys(json.loads(line)["sentence1"] for line in lines))
    report = import_stream(project, io.StringIO("".join(lines)), "snli")
    assert report.created == len(premises) and report.skipped == 30 - len(premises)
    assert [(e.premise, e.hypothesis, e.source_label) for e in project.examples.all()] == [
        (p, "", "") for p in premises
    ]
    assert not Annotation.objects.exists()  # SNLI's labels belong to its hypotheses, not to the premise
    again = import_stream(project, io.StringIO("".join(lines)), "snli")
    assert (again.created, again.already_present) == (0, len(premises))


def test_updates_need_a_hypothesis_and_import_one_item_per_pair(make_project, import_rows, shared_data):
    project = make_project("hypothesis_writing", targets="strengthener,weakener")
    with pytest.raises(Exception, match="hypothesis"):
        import_rows(project, [{"premise": KITE}])
    lines = (shared_data / "defeasible-nli" / "defeasible-snli" / "dev.jsonl").read_text().splitlines(True)[:20]
    rows = [json.loads(line) for line in lines]
    pairs = list(dict.fromkeys((r["Premise"], r["Hypothesis"]) for r in rows if not r["UpdateTypeImpossible"]))
    import_stream(project, io.StringIO("".join(lines)), "dnli")
    assert [(e.premise, e.hypothesis, e.update) for e in project.examples.all()] == [(p, h, "") for p, h in pairs]


# ---------------------------------------------------------------- sending to validation


def test_sending_creates_the_validation_project_once_and_pairs_once(writing, worker, author):
    write(writing, worker, GOOD)
    report = send_to_validation(writing)
    writing.refresh_from_db()
    validation = writing.validation_project
    assert (report.validation_project, report.created, report.already_sent) == ("writing-validation", 3, 0)
    assert (validation.task_type, validation.options["labels"], validation.redundancy, validation.owner) == (
        "nli_label",
        ["e", "n", "c"],
        5,
        author,
    )
    assert validation.status == writing.status
    answer = Annotation.objects.get(item__project=writing)
    examples = list(validation.examples.order_by("position"))
    assert [(e.premise, e.hypothesis, e.origin_id, e.origin_target, e.source_label) for e in examples] == [
        (KITE, GOOD[t], answer.id, t, t) for t in "enc"
    ]
    assert [e.source_id for e in examples] == [f"writing#{answer.item_id}r{answer.id}{t}" for t in "enc"]
    # The writer's intended label is each item's first vote.
    for item in validation.items.order_by("id"):
        assert list(item.annotations.values_list("worker", "value")) == [(worker.id, item.example.origin_target)]
        assert (item.annotation_count, item.target, item.claimable, item.status) == (1, 5, True, "open")

    again = send_to_validation(writing)
    assert (again.created, again.already_sent) == (0, 3)
    assert validation.examples.count() == 3 and Project.objects.count() == 2


def test_a_linked_project_must_fit_and_be_managed_by_the_owner(writing, make_project, make_user):
    labels = make_project("nli_label", slug="labels")
    update_project(writing, validation_project="labels")
    writing.refresh_from_db()
    assert writing.validation_project == labels
    foreign = make_project("nli_label", slug="foreign", owner=make_user("author2", "author"))
    slider = make_project("unli_slider", slug="slider")
    alpha = make_project("nli_label", slug="alpha", labels="1,2")
    for slug, message in (
        ("foreign", "names no project you manage"),
        ("nowhere", "names no project you manage"),
        ("writing", "names no project you manage"),
        ("slider", "is not a Three-way NLI label"),
        ("alpha", "is not a Three-way NLI label"),
    ):
        with pytest.raises(SettingError) as error:
            update_project(writing, validation_project=slug)
        assert message in error.value.errors["validation_project"], slug
    assert Project.objects.get(pk=writing.pk).validation_project == labels
    assert foreign and slider and alpha
    update_project(writing, validation_project="")
    assert Project.objects.get(pk=writing.pk).validation_project is None


def test_a_project_of_another_task_type_sends_nothing(make_project):
    with pytest.raises(LinkError) as error:
        send_to_validation(make_project("nli_label"))
    assert error.value.field == "project" and "sends nothing" in error.value.message


def test_auto_send_sends_each_page_on_submit(writing, worker):
    update_project(writing, auto_send=True)
    write(writing, worker, GOOD)
    validation = Project.objects.get(pk=writing.pk).validation_project
    assert validation.items.count() == 3


def written_and_sent(writing, writer, items_per_page: int) -> Project:
    """The writer's GOOD set, sent; returns the validation project, showing `items_per_page` items a page."""
    write(writing, writer, GOOD)
    send_to_validation(writing)
    return update_project(writing.validation_project, items_per_page=items_per_page)


def test_the_writer_never_validates_their_own_sentences(writing, make_user):
    writer = make_user("writer", "worker")
    validation = written_and_sent(writing, writer, items_per_page=10)
    assert claim_page(validation, writer) is None  # every item holds the writer's claim already
    page = claim_page(validation, make_user("validator", "worker"))
    assert page.claims.count() == 3


# ---------------------------------------------------------------- verdicts by SNLI's rule


def validate(validation, workers_labels):
    """Each (worker, {target: label}) submits one page of the validation project."""
    for worker, labels in workers_labels:
        page = claim_page(validation, worker)
        answers = {
            str(c.item_id): {"value": labels[c.item.example.origin_target]}
            for c in page.claims.select_related("item__example")
        }
        submit_page(page.pk, worker, answers)


@pytest.fixture
def validated(writing, make_user):
    """The writer's e / n / c set, sent, and four validators: 3 of 5 confirm e, n splits 2-2-1, c gets 4 of 5."""
    writer = make_user("writer", "worker")
    validation = written_and_sent(writing, writer, items_per_page=3)
    validators = [make_user(f"validator{n}", "worker") for n in range(4)]
    validate(
        validation,
        zip(
            validators,
            [
                {"e": "e", "n": "e", "c": "c"},
                {"e": "e", "n": "e", "c": "c"},
                {"e": "n", "n": "n", "c": "c"},
                {"e": "c", "n": "c", "c": "n"},
            ],
        ),
    )
    return writing, validation, writer


def test_the_snli_export_gives_gold_by_three_of_five_with_the_writer_first(validated):
    writing, validation, _ = validated
    records = {r["sentence2"]: r for r in map(json.loads, "".join(exporters.export(validation, "snli")).splitlines())}
    answer = Annotation.objects.get(item__project=writing)
    e, n, c = (records[GOOD[t]] for t in "enc")
    assert e["annotator_labels"] == ["entailment", "entailment", "entailment", "neutral", "contradiction"]
    assert e["gold_label"] == "entailment"
    assert n["annotator_labels"] == ["neutral", "entailment", "entailment", "neutral", "contradiction"]
    assert n["gold_label"] == "-"
    assert c["gold_label"] == "contradiction"
    assert [r["pairID"] for r in (e, n, c)] == [f"writing#{answer.item_id}r{answer.id}{t}" for t in "enc"]
    assert {r["captionID"] for r in (e, n, c)} == {f"writing#{answer.item_id}"}
    assert e["sentence1"] == KITE


def test_the_writer_report_gives_the_validation_rate_per_target(validated):
    figures = writer_figures(validated[0])
    assert [
        (f["writer"], f["target"], f["written"], f["sent"], f["validated"], f["confirmed"], f["rate"]) for f in figures
    ] == [
        ("writer", "e", 1, 1, 1, 1, 1.0),
        ("writer", "n", 1, 1, 1, 0, 0.0),
        ("writer", "c", 1, 1, 1, 1, 1.0),
    ]


def test_unsent_and_unsettled_pairs_count_as_written_only(writing, make_user):
    write(writing, make_user("writer", "worker"), GOOD)
    assert [(f["sent"], f["validated"], f["rate"]) for f in writer_figures(writing)] == [(0, 0, None)] * 3
    send_to_validation(writing)
    assert [(f["sent"], f["validated"], f["rate"]) for f in writer_figures(writing)] == [(1, 0, None)] * 3


def test_the_agreement_page_shows_the_writer_report_and_why_there_is_no_agreement(validated, author, settings):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    writing, validation, _ = validated
    figures = project_agreement(writing, bootstrap=0)
    assert figures["level"] is None and figures["krippendorff_alpha"] is None
    assert "no common answer" in figures["unavailable"]["agreement"]
    assert (figures["n_items"], figures["n_annotations"], figures["n_workers"]) == (1, 1, 1)
    out = io.StringIO()
    call_command("agreement", writing.slug, "--bootstrap", "0", stdout=out)
    assert "no agreement scale (free text)" in out.getvalue() and "None" not in out.getvalue()
    report = project_report(writing, bootstrap=0)
    assert report["plots"] == [] and report["tables"][0]["rows"][1] == ["writer", "Neutral", 1, 1, 1, 0, "0%", 1]
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{writing.slug}/report/").content.decode()
    assert "Writers: validation rate per target" in page and "Agreement figures" in page
    assert f"/projects/{validation.slug}/report/" in page


# ---------------------------------------------------------------- updates (delta-NLI)


def test_updates_go_to_a_defeasible_project_with_the_hypothesis_as_the_atom(make_project, import_rows, make_user):
    project = make_project("hypothesis_writing", slug="updates", targets="strengthener,weakener", items_per_page=1)
    premise, hypothesis = "A man in a suit waits at a bus stop.", "The man is going to work."
    import_rows(project, [{"id": "p1", "premise": premise, "hypothesis": hypothesis}])
    writer = make_user("writer", "worker")
    page = claim_page(project, writer)
    item_id = page.claims.get().item_id
    with pytest.raises(SubmissionError, match="repeats the hypothesis"):
        submit_page(
            page.pk,
            writer,
            {
                str(item_id): {
                    "value": {"strengthener": "The man is going to work.", "weakener": "It is Sunday morning."}
                }
            },
        )
    updates = {"strengthener": "He holds a briefcase with his company's logo.", "weakener": "It is Sunday morning."}
    submit_page(page.pk, writer, {str(item_id): {"value": updates}})
    send_to_validation(project)
    validation = Project.objects.get(pk=project.pk).validation_project
    assert (validation.task_type, validation.redundancy) == ("defeasible_atom", 3)
    items = list(validation.items.select_related("example", "atom").order_by("id"))
    assert [(i.example.update, i.example.update_type, i.atom.text, i.annotation_count) for i in items] == [
        (updates["strengthener"], "strengthener", hypothesis, 0),
        (updates["weakener"], "weakener", hypothesis, 0),
    ]
    assert claim_page(validation, writer) is None
    validators = [make_user(f"v{n}", "worker") for n in range(3)]
    update_project(validation, items_per_page=2)
    for worker, (strong, weak) in zip(validators, [(2, -1), (1, 0), (2, 1)]):
        page = claim_page(validation, worker)
        effects = {"strengthener": strong, "weakener": weak}
        submit_page(
            page.pk,
            worker,
            {
                str(c.item_id): {"value": effects[c.item.example.update_type]}
                for c in page.claims.select_related("item__example")
            },
        )
    records = [json.loads(line) for line in "".join(exporters.export(project, "dnli")).splitlines()]
    assert [(r["Premise"], r["Hypothesis"], r["Update"], r["UpdateType"]) for r in records] == [
        (premise, hypothesis, updates["strengthener"], "strengthener"),
        (premise, hypothesis, updates["weakener"], "weakener"),
    ]
    assert [(r["ValidationVotes"], r["ValidationVerdict"]) for r in records] == [
        ([2, 1, 2], "strengthener"),
        ([-1, 0, 1], "no effect"),
    ]
    assert [(f["target"], f["confirmed"], f["validated"]) for f in writer_figures(project)] == [
        ("strengthener", 1, 1),
        ("weakener", 0, 1),
    ]


def test_the_dnli_export_is_refused_for_hypothesis_writing(writing):
    with pytest.raises(exporters.ExportError, match="choose one of jsonl, csv"):
        exporters.export(writing, "dnli")


# ---------------------------------------------------------------- the page, the API and the command


def test_send_by_dashboard_button_api_and_command(writing, worker, author):
    write(writing, worker, GOOD)
    client = Client()
    client.force_login(author)
    dashboard = client.get(f"/projects/{writing.slug}/").content.decode()
    assert "Send to validation" in dashboard and "No validation project yet" in dashboard
    response = client.post(f"/projects/{writing.slug}/send-to-validation/", follow=True)
    assert "Sent 3 new pairs to writing-validation (0 sent before)" in response.content.decode()
    api = APIClient()
    api.force_login(author)
    answer = api.post(f"/api/projects/{writing.slug}/send-to-validation/")
    assert answer.json() == {"validation_project": "writing-validation", "created": 0, "already_sent": 3}
    out = io.StringIO()
    call_command("send_to_validation", writing.slug, "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"validation_project": "writing-validation", "created": 0, "already_sent": 3}
    assert Example.objects.filter(project__slug="writing-validation").count() == 3
    refused = api.post("/api/projects/writing-validation/send-to-validation/")
    assert refused.status_code == 409 and refused.json()["field"] == "project"


def test_the_link_is_a_setting_of_the_api_and_the_command_line(author, make_user, make_project, worker, import_rows):
    make_project("nli_label", slug="labels")
    make_project("nli_label", slug="theirs", owner=make_user("author2", "author"))
    api = APIClient()
    api.force_login(author)
    body = {"slug": "w1", "task_type": "hypothesis_writing", "validation_project": "theirs"}
    refused = api.post("/api/projects/", body, format="json")
    assert refused.status_code == 409 and refused.json()["field"] == "validation_project"
    created = api.post(
        "/api/projects/", {**body, "validation_project": "labels", "options": {"min_words": 4}}, format="json"
    )
    assert created.status_code == 201 and created.json()["validation_project"] == "labels"
    assert (
        api.patch("/api/projects/w1/", {"validation_project": None}, format="json").json()["validation_project"] is None
    )
    call_command(
        "create_project",
        "w2",
        "--task-type",
        "hypothesis_writing",
        "--owner",
        author.username,
        "--validation-project",
        "labels",
        stdout=io.StringIO(),
    )
    assert Project.objects.get(slug="w2").validation_project.slug == "labels"
    with pytest.raises(CommandError, match="is not a Defeasible atom effect"):  # updates need a -2..+2 project
        call_command(
            "create_project",
            "w3",
            "--task-type",
            "hypothesis_writing",
            "--owner",
            author.username,
            "--validation-project",
            "labels",
            "--targets",
            "strengthener,weakener",
        )
    import_rows(Project.objects.get(slug="w1"), [{"id": "p", "premise": "A dog sleeps under a table."}])
    update_project(Project.objects.get(slug="w1"), status="published")
    api.force_login(worker)
    seen = api.get("/api/projects/w1/").json()
    assert "validation_project" not in seen and seen["options"]["min_words"] == 4


def test_the_work_page_keeps_typed_sentences_after_a_refusal(writing, worker):
    client = Client()
    client.force_login(worker)
    page = client.get(f"/work/{writing.slug}/")
    item = page.context["items"][0]
    assert f'name="value_{item.id}.e"' in page.content.decode()
    form = {f"value_{item.id}.{t}": sentence for t, sentence in {**GOOD, "n": "Too short"}.items()}
    response = client.post(f"/work/{writing.slug}/{page.context['assignment'].id}/submit/", form)
    html = response.content.decode()
    assert response.status_code == 400 and f'data-field="answers[{item.id}].value.n"' in html
    assert "Neutral: 2 words; write at least 3" in html and GOOD["c"] in html
    form[f"value_{item.id}.n"] = GOOD["n"]
    assert client.post(f"/work/{writing.slug}/{page.context['assignment'].id}/submit/", form).status_code == 302
    assert Annotation.objects.get().value == GOOD


def test_the_demo_project_loads(db):
    from dataset_io.demo import load_demo

    load_demo()
    project = Project.objects.get(slug="demo-writing")
    assert project.task_type == "hypothesis_writing" and project.items.count() == 6
    assert all(not example.hypothesis for example in project.examples.all())
