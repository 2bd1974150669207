"""Evaluate a study in one step (issue 52, item 1): the figures equal the path by hand (export, predict,
evaluate) exactly, for a ChaosNLI study and for atom studies; bad input is refused before anything runs."""

import json

import pytest
from conftest import PAIRS, build_bert_classifier, build_unli_regressor, import_usnli_pairs
from django.core.management import CommandError, call_command

from dataset_io.services.importers import import_file
from evaluation.study_evaluation.protocols import Settings
from evaluation.study_evaluation.scoring import evaluate_folders
from jobs.services import JobError

pytestmark = pytest.mark.django_db

CHAOS_FIGURES = ("n", "jsd", "kl", "old_acc", "majority_acc", "human_split_jsd", "human_split_jsd_items")


def flat(figures, prefix=""):
    """Every number of a result, by dotted name."""
    out = {}
    for key, value in figures.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= flat(value, name + ".")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    return out


def assert_same_figures(got, expected):
    got, expected = flat(got), flat(expected)
    assert expected, "the hand path gave no figure"
    missing = set(expected) - set(got)
    assert not missing, missing
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-9, rel=0), name


def test_a_chaosnli_study_gives_the_figures_of_export_predict_evaluate(
    shared_data, make_project, tiny_nli, tmp_path, capsys
):
    project = make_project("nli_label", slug="chaos-snli")
    import_file(project, shared_data / "chaosnli" / "chaosNLI_snli.jsonl", "chaosnli")

    export, predictions = tmp_path / "export.jsonl", tmp_path / "predictions.json"
    call_command("export_dataset", project.slug, format="chaosnli", output=str(export))
    call_command(
        "predict",
        model=str(tiny_nli),
        input=str(export),
        output=str(predictions),
        format="chaosnli",
        name="tiny",
        max_length=128,  # the tiny checkpoint's position embeddings; the study evaluation reads them itself
    )
    capsys.readouterr()
    call_command("evaluate", "chaos", human=str(export), predictions=str(predictions), bootstrap=200, json=True)
    by_hand = json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    result = evaluate_folders(project, [tiny_nli], tmp_path / "out", Settings(bootstrap=200))
    figures = result["models"][tiny_nli.name]
    assert figures["n"] == 1514
    assert_same_figures({k: v for k, v in figures.items() if k != "alt_test"}, by_hand)
    assert result["reference"]["sources"] == {"adjudicated": 0, "collected": 0, "imported": 1514}
    assert figures["alt_test"]["unavailable"]  # imported votes have no annotator
    assert result["reference"]["warnings"] == []


# Atom studies: the hand-made suite files ------------------------------------------------------------------

ATOM_PAIRS = [
    ("a man is sleeping on the bench", "a man is sleeping", "entailment", ["a man is sleeping", "a man is on a bench"]),
    ("two dogs are running in the park", "dogs are inside", "contradiction", ["dogs are inside", "two dogs"]),
    ("a woman plays the guitar", "a woman plays the guitar outside", "neutral", ["a woman plays", "it is outside"]),
    ("the child is happy", "the child is sad", "contradiction", ["the child is sad"]),
]


def predict_by_hand(model, pairs, tmp_path, name):
    """The `predict` command on a pairs file written by hand: id -> predicted label."""
    source, output = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-predicted.jsonl"
    source.write_text("".join(json.dumps({"id": i, "premise": p, "hypothesis": h}) + "\n" for i, p, h in pairs))
    call_command("predict", model=str(model), input=str(source), output=str(output), max_length=128)
    return {row["id"]: row for row in map(json.loads, output.read_text().splitlines())}


def evaluate_by_hand(suite, path, capsys):
    capsys.readouterr()
    call_command("evaluate", suite, input=str(path), json=True)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def settled_atoms(example, collected_only=False):
    """An exported example's atoms with their reference: collected where settled, else imported."""
    kept = []
    for atom in example["atoms"]:
        if atom["collected"] is not None:
            kept.append((atom, atom["collected"]))
        elif not collected_only and atom["validity"] in ("valid", "invalid") and "effect" not in example:
            kept.append((atom, atom["validity"]))
    return kept


@pytest.fixture
def validity_study(make_project, import_rows):
    from annotation.services.simulation import simulate

    project = make_project("atom_validity", slug="validity")
    import_rows(
        project,
        [{"id": f"v{i}", "premise": p, "hypothesis": h, "label": y} for i, (p, h, y, _) in enumerate(ATOM_PAIRS)],
    )
    import_rows(
        project,
        [
            {
                "example_id": f"v{i}",
                "atoms": [{"text": t, "validity": "valid" if k == 0 else "invalid"} for k, t in enumerate(atoms)],
            }
            for i, (_, _, _, atoms) in enumerate(ATOM_PAIRS)
        ],
        "atoms",
    )
    items = list(project.items.order_by("id"))
    simulate(project, items[: len(items) // 2], seed=3)  # half settled by answers, half by the imported validity
    return project


def test_an_atom_validity_study_gives_the_figures_of_the_nli_atoms_suite(validity_study, tiny_nli, tmp_path, capsys):
    export = tmp_path / "atoms.jsonl"
    call_command("export_dataset", validity_study.slug, format="atoms", output=str(export))
    examples = [json.loads(line) for line in export.read_text().splitlines()]
    pairs = []
    for example in examples:
        pairs.append((example["id"], example["premise"], example["hypothesis"]))
        for k, (atom, _) in enumerate(settled_atoms(example)):
            pairs.append((f"{example['id']}/p{k}", example["premise"], atom["text"]))
            pairs.append((f"{example['id']}/h{k}", example["hypothesis"], atom["text"]))
    labels = {key: row["label"] for key, row in predict_by_hand(tiny_nli, pairs, tmp_path, "atoms").items()}
    suite_file, judged = tmp_path / "nli_atoms.jsonl", []
    with suite_file.open("w") as out:
        for example in examples:
            atoms = []
            for k, (atom, reference) in enumerate(settled_atoms(example)):
                valid = reference == "valid"
                atoms.append({"text": atom["text"], "entailed_by_hypothesis": valid})
                if valid:
                    atoms[-1]["predicted_label"] = labels[f"{example['id']}/p{k}"]
                model_valid = labels[f"{example['id']}/h{k}"] == "entailment" != labels[f"{example['id']}/p{k}"]
                judged.append(model_valid == valid)
            row = {"id": example["id"], "gold_label": example["label"], "predicted_label": labels[example["id"]]}
            out.write(json.dumps(row | {"atoms": atoms}) + "\n")
    by_hand = evaluate_by_hand("nli-atoms", suite_file, capsys)

    result = evaluate_folders(validity_study, [tiny_nli], tmp_path / "out", Settings(bootstrap=50))
    figures = result["models"][tiny_nli.name]
    assert_same_figures({k: v for k, v in figures.items() if not k.startswith("validity_")}, by_hand)
    assert figures["validity_accuracy"] == pytest.approx(sum(judged) / len(judged), abs=1e-12)
    sources = result["reference"]["sources"]
    assert sources["collected"] > 0 and sources["imported"] > 0
    assert sources["collected"] + sources["imported"] + sources["adjudicated"] == len(judged)
    assert "below 30" in result["reference"]["warnings"][0]
    assert result["human_baseline"]["items"] > 0 and 0 <= result["human_baseline"]["validity_accuracy"] <= 1

    collected = evaluate_folders(
        validity_study, [tiny_nli], tmp_path / "out2", Settings(bootstrap=50), collected_only=True
    )
    assert collected["reference"]["sources"]["imported"] == 0
    assert collected["reference"]["sources"]["collected"] == sources["collected"]


@pytest.fixture
def defeasible_study(make_project, import_rows):
    from annotation.services.simulation import simulate
    from annotation.tasktypes.demo_text import atom_example_rows, atom_rows

    project = make_project("defeasible_atom", slug="defeasible")
    import_rows(project, list(atom_example_rows()))
    import_rows(project, list(atom_rows()), "atoms")
    simulate(project, list(project.items.all()), seed=5)  # the demo's simulated answers
    return project


DEFEASIBLE_LABELS = {0: "strengthener", 1: "weakener", 2: "neutral"}


def likelier_update(row):
    """A full example is a strengthener or a weakener, whatever else the model may say."""
    return max(("strengthener", "weakener"), key=lambda label: row["probabilities"][label])


def test_a_defeasible_study_gives_the_figures_of_the_defeasible_suite(defeasible_study, tmp_path, capsys):
    model = tmp_path / "tiny-defeasible"
    build_bert_classifier(model, id2label=DEFEASIBLE_LABELS, seed=4)
    export = tmp_path / "atoms.jsonl"
    call_command("export_dataset", defeasible_study.slug, format="atoms", output=str(export))
    examples = [
        e
        for e in map(json.loads, export.read_text().splitlines())
        if any(a["collected"] is not None for a in e["atoms"])
    ]
    pairs = []
    for example in examples:
        pairs.append((example["id"], f"{example['premise']} {example['hypothesis']}", example["update"]))
        for k, atom in enumerate(a for a in example["atoms"] if a["collected"] is not None):
            pairs.append((f"{example['id']}/{k}", f"{example['premise']} {atom['text']}", example["update"]))
    predicted = predict_by_hand(model, pairs, tmp_path, "defeasible")
    labels = {key: row["label"] for key, row in predicted.items()}
    suite_file = tmp_path / "defeasible.jsonl"
    with suite_file.open("w") as out:
        for example in examples:
            atoms = [
                {
                    "text": atom["text"],
                    "valid": True,
                    "gold": atom["collected"],
                    "predicted_label": labels[f"{example['id']}/{k}"],
                }
                for k, atom in enumerate(a for a in example["atoms"] if a["collected"] is not None)
            ]
            row = {
                "id": example["id"],
                "gold_label": example["update_type"] or example["label"],
                "predicted_label": likelier_update(predicted[example["id"]]),
            }
            out.write(json.dumps(row | {"atoms": atoms}) + "\n")
    by_hand = evaluate_by_hand("defeasible", suite_file, capsys)

    result = evaluate_folders(defeasible_study, [model], tmp_path / "out", Settings(bootstrap=50))
    assert result["reference"]["items"] == len(examples)
    assert_same_figures(result["models"]["tiny-defeasible"], by_hand)
    assert result["models"]["tiny-defeasible"]["buckets"] == by_hand["buckets"]
    assert set(result["human_baseline"]) >= {"pearson", "spearman", "mse", "items"}


# Bad input: refused before anything runs -------------------------------------------------------------------


def test_the_command_prints_each_models_figures_under_its_name(defeasible_study, tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    build_bert_classifier(first, id2label=DEFEASIBLE_LABELS, seed=1)
    build_bert_classifier(second, num_labels=2, id2label={0: "weakener", 1: "strengthener"}, seed=2)
    capsys.readouterr()
    call_command("evaluate_study", defeasible_study.slug, "--model", str(first), "--model", str(second), "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert list(result["models"]) == ["first", "second"]
    assert result["models"]["first"]["atom_labels"] in ("binary", "ternary")
    assert result["models"]["second"]["atom_labels"] == "binary"  # a two-label model never says neutral
    assert result["reference"]["sources"]["collected"] == result["reference"]["atoms"]


def test_a_checkpoint_of_the_wrong_kind_is_refused_naming_it(defeasible_study, tiny_nli, tmp_path):
    with pytest.raises(
        CommandError,
        match=r"a nli checkpoint cannot be scored on this study \(its defeasible evaluation takes defeasible",
    ):
        call_command("evaluate_study", defeasible_study.slug, "--model", str(tiny_nli), "--output", str(tmp_path))
    assert not any(tmp_path.iterdir())  # nothing ran


def test_a_model_whose_labels_do_not_map_is_refused(make_project, import_rows, tmp_path):
    study = make_project("nli_label", slug="labels")
    import_rows(
        study,
        [{"uid": "a", "example": {"premise": "a man", "hypothesis": "a man"}, "label_counter": {"e": 2}}],
        "chaosnli",
    )
    odd = tmp_path / "odd"
    build_bert_classifier(odd, id2label={0: "yes", 1: "no", 2: "maybe"})
    with pytest.raises(JobError, match=r"labels yes, no, maybe do not map to the study's entailment, neutral"):
        evaluate_folders(study, [odd], tmp_path / "out")


def test_a_study_without_settled_items_is_refused(make_project, import_rows, tiny_nli, tmp_path):
    study = make_project("nli_label", slug="unanswered")
    import_rows(study, [{"id": "a", "premise": "a man", "hypothesis": "a man is sleeping"}])
    with pytest.raises(JobError, match="study unanswered has no settled items to evaluate against"):
        evaluate_folders(study, [tiny_nli], tmp_path / "out")


def test_collected_answers_only_refuses_a_study_of_imported_votes(make_project, import_rows, tiny_nli, tmp_path):
    study = make_project("nli_label", slug="imported")
    import_rows(
        study,
        [{"uid": "a", "example": {"premise": "a man", "hypothesis": "a man"}, "label_counter": {"e": 2}}],
        "chaosnli",
    )
    with pytest.raises(JobError, match=r"no settled items to evaluate against from collected answers"):
        evaluate_folders(study, [tiny_nli], tmp_path / "out", collected_only=True)


def slider_gold(i):
    """The slider studies' gold probability of row i."""
    return f"{(i * 5 % 11) / 11 + 0.02:.3f}"


def test_a_slider_study_gives_the_figures_of_export_predict_evaluate_unli(make_project, tmp_path, capsys):
    study = make_project("unli_slider", slug="slider")
    import_usnli_pairs(study, PAIRS * 2, slider_gold)
    model = tmp_path / "tiny-unli"
    build_unli_regressor(model)

    export, predictions = tmp_path / "slider.csv", tmp_path / "predictions.csv"
    call_command("export_dataset", study.slug, format="usnli", output=str(export))
    call_command("predict", model=str(model), input=str(export), output=str(predictions), format="csv", max_length=128)
    capsys.readouterr()
    call_command("evaluate", "unli", gold=str(export), predictions=str(predictions), json=True)
    by_hand = json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    result = evaluate_folders(study, [model], tmp_path / "out")
    assert result["models"]["tiny-unli"]["n"] == 2 * len(PAIRS)
    assert_same_figures(result["models"]["tiny-unli"], by_hand)
    assert result["reference"]["sources"] == {"adjudicated": 0, "collected": 0, "imported": 2 * len(PAIRS)}
    assert result["human_baseline"] == {"unavailable": "no item has two or more worker answers yet"}


def test_a_hypothesis_only_baseline_is_its_checkpoint_on_the_hypotheses_alone_in_a_row_of_its_own(
    make_project, import_rows, tiny_nli, tmp_path, capsys
):
    """The U-SNLI paper's baseline: the given checkpoint reads each hypothesis alone, whether or not it was
    trained so; its figures equal those of the same weights flagged hypothesis-only, scored as a model."""
    import shutil

    from evaluation.study_evaluation.protocols import headline_rows
    from models_backend.checkpoint_spec import HYPOTHESIS_ONLY_KEY

    study = make_project("unli_slider", slug="slider-baseline")
    import_usnli_pairs(study, PAIRS * 2, slider_gold)
    model = tmp_path / "tiny-unli"
    build_unli_regressor(model)
    flagged = tmp_path / "tiny-unli-flagged"
    shutil.copytree(model, flagged)
    config = json.loads((flagged / "config.json").read_text())
    (flagged / "config.json").write_text(json.dumps(config | {HYPOTHESIS_ONLY_KEY: True}))

    result = evaluate_folders(study, [model], tmp_path / "out", baseline=model)
    as_model = evaluate_folders(study, [flagged], tmp_path / "flagged")["models"]["tiny-unli-flagged"]
    baseline = result["hypothesis_only_baseline"]
    assert baseline["model"] == "tiny-unli" and baseline["n"] == 2 * len(PAIRS)
    for figure in ("pearson", "spearman", "mse"):
        assert baseline[figure] == pytest.approx(as_model[figure], abs=1e-9, rel=0), figure
    assert baseline["pearson"] != pytest.approx(result["models"]["tiny-unli"]["pearson"], abs=1e-6)  # premises count
    assert as_model["hypothesis_only"] is True
    assert [row["model"] for row in headline_rows(result)] == ["tiny-unli", "tiny-unli (hypothesis-only baseline)"]
    assert "comparison" not in result  # one model: the baseline is not among the models compared

    call_command("evaluate_study", study.slug, model=[str(model)], baseline=str(model))
    assert "tiny-unli (hypothesis-only baseline): pearson" in capsys.readouterr().out

    labels = make_project("nli_label", slug="labels-baseline")
    import_rows(
        labels, [{"uid": "g0", "example": {"premise": "P", "hypothesis": "H"}, "label_counter": {"e": 3}}], "chaosnli"
    )
    with pytest.raises(JobError, match="only probability \\(UNLI\\) studies have one"):
        evaluate_folders(labels, [tiny_nli], tmp_path / "refused", baseline=model)
