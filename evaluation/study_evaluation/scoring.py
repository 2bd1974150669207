"""The models on a reference: their inputs, batched inference, the suites' files and figures, the headline
figures as a function of resampled items, and the models compared."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from evaluation.study_evaluation.protocols import (
    DEFEASIBLE_LABELS,
    PROTOCOLS,
    UPDATE_TYPES,
    Protocol,
    Settings,
    check_baseline,
    label_order,
    model_names,
    protocol_of,
)
from evaluation.study_evaluation.reference import (
    Reference,
    human_baseline_figures,
    read_reference,
    scored_examples,
    unscored_reason,
    update_type,
    write_reference,
)
from jobs.services import JobError
from models_backend.checkpoint_spec import ENC_LABELS, ModelSpec


def model_inputs(protocol: Protocol, rows: list[dict]) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (first segments, second segments) each checkpoint reads for this protocol."""
    if protocol.suite == "unli":
        return {"pairs": ([r["pre"] for r in rows], [r["hyp"] for r in rows])}
    if protocol.suite == "chaos":
        return {"pairs": ([r["example"]["premise"] for r in rows], [r["example"]["hypothesis"] for r in rows])}
    atoms = [(row, atom["text"]) for row in rows for atom in row["atoms"]]
    if protocol.suite == "nli-atoms":
        return {
            "pairs": ([r["premise"] for r in rows], [r["hypothesis"] for r in rows]),
            "premise_atom": ([r["premise"] for r, _ in atoms], [text for _, text in atoms]),
            "hypothesis_atom": ([r["hypothesis"] for r, _ in atoms], [text for _, text in atoms]),
        }
    return {
        "pairs": ([f"{r['premise']} {r['hypothesis']}" for r in rows], [r["update"] for r in rows]),
        "premise_atom_update": ([f"{r['premise']} {text}" for r, text in atoms], [r["update"] for r, _ in atoms]),
    }


def predict_inputs(
    folder: Path,
    inputs: dict,
    *,
    batch_size: int,
    precision: str,
    device: str | None,
    progress=None,
    hypothesis_only: bool = False,
) -> tuple[ModelSpec, dict[str, np.ndarray], str]:
    """One checkpoint's outputs on every input set, with the prediction job's batched runner, and the device
    they were computed on. hypothesis_only: the checkpoint reads the second segments alone, as a checkpoint
    trained on hypotheses alone does by itself."""
    from models_backend.checkpoint_spec import trained_length
    from models_backend.devices import pick_device, pick_precision
    from models_backend.registry import inspect_checkpoint, load_model
    from models_backend.runner import predict_pairs

    spec = inspect_checkpoint(folder)
    if hypothesis_only:
        spec = replace(spec, hypothesis_only=True)
    torch_device = pick_device(device)
    model, tokenizer = load_model(spec, torch_device, pick_precision(torch_device, precision))
    total, done, outputs = sum(len(first) for first, _ in inputs.values()), 0, {}
    for name, (first, second) in inputs.items():
        outputs[name] = predict_pairs(
            spec,
            model,
            tokenizer,
            first,
            second,
            batch_size=batch_size,
            max_length=trained_length(spec.path),
            progress=_offset(progress, done, total),
        )
        done += len(first)
    return spec, outputs, str(torch_device)


def _offset(progress, done: int, total: int):
    """progress(done, total) over every input set, from the runner's progress within one set."""
    if progress is None:
        return None
    return lambda within, _set_total: progress(done + within, total)


# The suites' files and figures ---------------------------------------------------------------------------


def _labels(probabilities: np.ndarray, order: list[int], names: Sequence[str]) -> list[str]:
    """The protocol's label of each row's most probable output, outputs taken in the protocol's order."""
    return [names[int(i)] for i in probabilities[:, order].argmax(axis=1)]


def write_suite_files(
    protocol: Protocol, rows: list[dict], outputs: dict, order: list[int], name: str, folder: Path
) -> dict[str, Path]:
    """The files the protocol's suite reads (role -> path), as a person would write them by hand."""
    from models_backend.prediction import chaosnli_predictions, write_csv

    folder.mkdir(parents=True, exist_ok=True)
    if protocol.suite == "unli":
        path = folder / "predictions.csv"
        write_csv(path, [r["id"] for r in rows], outputs["pairs"], None)
        return {"predictions": path}
    if protocol.suite == "chaos":
        path = folder / "predictions.json"
        uids = [r["uid"] for r in rows]
        path.write_text(json.dumps(chaosnli_predictions(name, uids, outputs["pairs"][:, order])), encoding="utf-8")
        return {"predictions": path}
    records, position = [], 0
    if protocol.suite == "nli-atoms":
        full = _labels(outputs["pairs"], order, ENC_LABELS)
        premise_atom = _labels(outputs["premise_atom"], order, ENC_LABELS)
        for row, label in zip(rows, full):
            atoms = []
            for atom in row["atoms"]:
                valid = atom["reference"] == "valid"
                atoms.append(
                    {"text": atom["text"], "entailed_by_hypothesis": valid}
                    | ({"predicted_label": premise_atom[position]} if valid else {})
                )
                position += 1
            records.append({"id": row["id"], "gold_label": row["label"], "predicted_label": label, "atoms": atoms})
        path = folder / "nli_atoms.jsonl"
    else:
        # A full example is a strengthener or a weakener: its label is the likelier of the two.
        full = _labels(outputs["pairs"], order[:2], UPDATE_TYPES)
        atom_labels = _labels(outputs["premise_atom_update"], order, DEFEASIBLE_LABELS[: len(order)])
        for row, label in zip(rows, full):
            atoms = []
            for atom in row["atoms"]:
                atoms.append(
                    {
                        "text": atom["text"],
                        "valid": atom["validity"] != "invalid",  # atoms a validity study has not ruled out
                        "gold": int(atom["reference"]),
                        "predicted_label": atom_labels[position],
                    }
                )
                position += 1
            records.append(
                {
                    "id": row["id"],
                    "premise": row["premise"],
                    "hypothesis": row["hypothesis"],
                    "update": row["update"],
                    "gold_label": update_type(row),
                    "predicted_label": label,
                    "atoms": atoms,
                }
            )
        path = folder / "defeasible_atoms.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return {"input": path}


def validity_judged_right(rows: list[dict], outputs: dict, order: list[int]) -> list[np.ndarray]:
    """Per example, per atom: does the NLI model, as a validity judge by the atoms paper's pruning rule (H
    entails the atom, P does not), agree with the study's validity of the atom?"""
    entailment = order[0]
    judged_valid = (outputs["hypothesis_atom"].argmax(axis=1) == entailment) & (
        outputs["premise_atom"].argmax(axis=1) != entailment
    )
    flags, position = [], 0
    for row in rows:
        gold = np.array([atom["reference"] == "valid" for atom in row["atoms"]], dtype=bool)
        flags.append(judged_valid[position : position + len(gold)] == gold)
        position += len(gold)
    return flags


def suite_figures(
    protocol: Protocol, reference: Reference, files: dict[str, Path], name: str, settings: Settings, buckets=None
) -> dict:
    """The suite's figures for one model's files (evaluation.suites, as `evaluate <suite>` computes them)."""
    from evaluation import suites
    from evaluation.readers import RowError

    if protocol.suite == "unli":
        return suites.run_unli(reference.path, files["predictions"])
    if protocol.suite == "chaos":
        figures = suites.run_chaos(
            reference.path, files["predictions"], model=name, seed=settings.seed, bootstrap=settings.bootstrap
        )
        annotations = reference.annotations
        if annotations is None:
            figures["alt_test"] = {"unavailable": "no per-annotation file"}
            return figures
        try:
            figures["alt_test"] = suites.run_alt_test(
                annotations, files["predictions"], model=name, min_items=settings.alt_test_min_items
            )
        except RowError as error:  # too few annotators per item: the alt-test has nothing to test
            message = str(error)
            for folder in {annotations.parent, Path(files["predictions"]).parent}:  # no host path in a result
                message = message.replace(f"{folder}/", "")
            figures["alt_test"] = {"unavailable": message}
        return figures
    if protocol.suite == "nli-atoms":
        return suites.run_nli_atoms(files["input"])
    embed, entails = buckets or (None, None)
    return suites.run_defeasible(files["input"], weighted=settings.weighted, embed=embed, entails=entails)


def item_scorer(protocol: Protocol, files: dict[str, Path], reference: Reference, name: str, extra: dict):
    """(number of items, score(indices) -> the protocol's headline figures on those items, repeats allowed):
    the suites' own loaders and metrics on a resample of the items."""
    import pandas as pd

    from evaluation import suites
    from evaluation.readers import read_defeasible, read_nli_atoms
    from metrics.atomic_nli import logical_consistency
    from metrics.defeasible import defeasible_scores
    from metrics.distributions import human_vs_model
    from metrics.regression import unli_scores

    if protocol.suite == "unli":
        unli = suites.load_unli(reference.path, files["predictions"])
        return len(unli.y_true), lambda idx: _pick(unli_scores(unli.y_true[idx], unli.y_pred[idx]), protocol)
    if protocol.suite == "chaos":
        chaos = suites.load_chaos(reference.path, files["predictions"], name)

        def score_chaos(idx):
            figures = human_vs_model(
                chaos.human[idx],
                chaos.model[idx],
                chaos.entropy[idx],
                chaos.majority_label[idx],
                chaos.old_label[idx],
                chaos.predicted_label[idx],
            )
            return _pick(figures, protocol)

        return len(chaos.uid), score_chaos
    if protocol.suite == "nli-atoms":
        examples, atom_labels = read_nli_atoms(files["input"])
        validity = extra["validity_judged_right"]

        def score_atoms(idx):
            figures = logical_consistency(
                examples["gold_label"].to_numpy()[idx],
                examples["predicted_label"].to_numpy()[idx],
                [atom_labels[i] for i in idx],
            )
            flags = np.concatenate([validity[i] for i in idx])
            return _pick(figures | {"validity_accuracy": float(flags.mean()) if flags.size else None}, protocol)

        return len(examples), score_atoms
    examples, atoms = read_defeasible(files["input"])
    by_example = dict(tuple(atoms.groupby("example")))
    binary, weighted = extra["binary_atoms"], extra["weighted"]

    def score_defeasible(idx):
        # The i-th drawn example takes position i, its atoms with it: a repeated example is a new example.
        resampled = [by_example[i].assign(example=position) for position, i in enumerate(idx) if i in by_example]
        table = pd.concat(resampled, ignore_index=True) if resampled else atoms.iloc[0:0]
        picked = examples.iloc[idx].reset_index(drop=True)
        return _pick(defeasible_scores(picked, table, binary_atoms=binary, weighted=weighted), protocol)

    return len(examples), score_defeasible


def _pick(figures: dict, protocol: Protocol) -> dict:
    """The headline figures; one that is undefined on a resample (no scored example drawn) is NaN."""
    return {name: np.nan if figures.get(name) is None else figures[name] for name, _ in protocol.headline}


# The whole evaluation ------------------------------------------------------------------------------------


def evaluate_study(
    reference: Reference,
    models: Mapping[str, str | Path],
    folder: Path,
    settings: Settings | None = None,
    *,
    human_baseline: dict | None = None,
    baseline: tuple[str, str | Path] | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Every model's figures on the reference, under its name, the human baseline beside them and, with two
    or more models, their comparison on the same resampled items. Writes each model's suite files into
    `folder`/<name>. baseline: (name, folder) of a UNLI checkpoint run on the hypotheses alone, the U-SNLI
    paper's hypothesis-only baseline; its figures come apart from the models' (`hypothesis_only_baseline`)."""
    from evaluation.suites import json_ready

    settings = settings or Settings()
    started = time.perf_counter()
    protocol = PROTOCOLS[reference.protocol]
    rows = read_reference(reference)
    scored = scored_examples(protocol, rows)
    if not scored:
        raise JobError(
            f"no reference item of this study ({protocol.suite}) can be scored ({unscored_reason(protocol)})"
        )
    inputs = model_inputs(protocol, scored)
    buckets = (
        _bucket_functions(settings.bucket_nli, settings.bucket_embedder, settings.device)
        if protocol.suite == "defeasible" and settings.bucket_nli
        else None
    )
    results, scorers = {}, {}
    for index, (name, model_folder) in enumerate(models.items()):
        if log:
            log(f"model {name}: {sum(len(first) for first, _ in inputs.values())} inputs")
        spec, outputs, device = predict_inputs(
            Path(model_folder),
            inputs,
            batch_size=settings.batch_size,
            precision=settings.precision,
            device=settings.device,
            progress=(lambda done, total, i=index: progress(i * total + done, len(models) * total))
            if progress
            else None,
        )
        order = label_order(protocol, spec)
        files = write_suite_files(protocol, scored, outputs, order, name, Path(folder) / name)
        figures = suite_figures(protocol, reference, files, name, settings, buckets) | {"device": device}
        extra: dict = {"weighted": settings.weighted, "binary_atoms": figures.get("atom_labels") == "binary"}
        if protocol.suite == "nli-atoms":
            extra["validity_judged_right"] = validity_judged_right(scored, outputs, order)
            flags = np.concatenate(extra["validity_judged_right"])
            figures |= {"validity_accuracy": float(flags.mean()), "validity_atoms": int(flags.size)}
        if spec.hypothesis_only:
            figures["hypothesis_only"] = True  # the hypothesis-only baseline of the UNLI paper
        results[name] = figures
        scorers[name] = item_scorer(protocol, files, reference, name, extra)
    result = {
        "study_protocol": protocol.suite,
        "suite": protocol.suite,
        "reference": reference.describe()
        | ({"examples_not_scored": len(rows) - len(scored)} if len(rows) != len(scored) else {}),
        "models": results,
        "human_baseline": human_baseline or {},
        "seconds": round(time.perf_counter() - started, 3),
    }
    if baseline is not None:
        result["hypothesis_only_baseline"] = hypothesis_only_baseline(
            protocol, reference, scored, inputs, baseline, Path(folder), settings
        )
    if len(models) >= 2:
        result["comparison"] = compare(protocol, scorers, settings)
    return json_ready(result)


def hypothesis_only_baseline(protocol, reference, rows, inputs, baseline, folder: Path, settings) -> dict:
    """The UNLI suite's figures for a checkpoint that reads each pair's hypothesis alone."""
    check_baseline(protocol)
    name, model_folder = baseline
    _, outputs, device = predict_inputs(
        Path(model_folder),
        {"pairs": inputs["pairs"]},
        batch_size=settings.batch_size,
        precision=settings.precision,
        device=settings.device,
        hypothesis_only=True,
    )
    files = write_suite_files(protocol, rows, outputs, [], name, folder / f"{name}-hypothesis-only")
    return {"model": name, **suite_figures(protocol, reference, files, name, settings), "device": device}


def _bucket_functions(nli: str, embedder: str | None, device: str | None):
    """(embed, entails) for buckets of equivalent atoms (metrics.defeasible.equivalent_atom_groups)."""
    from models_backend.pipelines.equivalence import nli_entailment, sentence_embedder

    return sentence_embedder(embedder, device), nli_entailment(nli, device)


def compare(protocol: Protocol, scorers: dict, settings: Settings) -> dict:
    """metrics.model_comparison over the protocol's headline figures: every model scored on the same
    resampled items, each model's paired difference to the best."""
    from metrics.model_comparison import compare_models

    sizes = {n for n, _ in scorers.values()}
    (n_items,) = sizes  # every model read the same reference
    comparison = compare_models(
        lambda model, idx: scorers[model][1](np.asarray(idx)),
        list(scorers),
        n_items,
        dict(protocol.headline),
        n_boot=settings.bootstrap or 1000,
        seed=settings.seed,
    )
    return comparison.as_dict()


def evaluate_folders(
    project,
    folders: Sequence[str | Path],
    output: Path,
    settings: Settings | None = None,
    *,
    collected_only: bool = False,
    baseline: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The command line's way: checkpoint folders on this host, run here and now, nothing stored. Every
    checkpoint is checked against the study before any runs; baseline: a hypothesis-only baseline's folder."""
    import tempfile

    from evaluation.study_evaluation.as_annotator import study_as_annotator
    from models_backend.registry import inspect_checkpoint

    settings = settings or Settings()
    protocol = protocol_of(project)
    if baseline:
        check_baseline(protocol)
    for folder in [*folders, *([baseline] if baseline else [])]:
        label_order(protocol, inspect_checkpoint(folder))
    with tempfile.TemporaryDirectory() as scratch:
        reference = write_reference(project, Path(scratch), collected_only)
        result = evaluate_study(
            reference,
            dict(zip(model_names([str(f) for f in folders]), folders)),
            output,
            settings,
            human_baseline=human_baseline_figures(project, protocol, settings.seed),
            baseline=(model_names([str(baseline)])[0], baseline) if baseline else None,
            progress=progress,
        )
    # As the job does (jobs.run_job): each model beside the study's annotators, never stored as answers.
    result["as_annotator"] = study_as_annotator(project, result, Path(output))
    return result
