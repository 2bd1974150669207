"""Evaluate a study in one step: its settled items, one or more checkpoints, every figure the papers report for
the study's protocol (docs/models.md, "Evaluating a study").

The chain, one implementation for the page, the API and `manage.py evaluate_study`:
1. `write_reference`: the study's export (the one users download, with the study's own final labels) cut to the
   items whose reference value is settled, each counted by where its value comes from (adjudicated, collected,
   imported); "collected answers only" drops the imported ones. Checked before a job is stored.
2. `model_inputs`: the pairs each checkpoint reads: (premise, hypothesis) pairs; for atom studies also
   (premise, atom) and (hypothesis, atom); for defeasible studies (premise + hypothesis, update) and
   (premise + atom, update), delta-NLI's input shape (the update is the second segment).
3. Batched inference with models_backend.runner (the prediction job's code), one checkpoint at a time.
4. `write_suite_files` writes what a person would have made by hand for the evaluation suite (ChaosNLI
   predictions, the nli-atoms or defeasible JSON Lines, U-SNLI predictions), and the suites of
   evaluation.suites score them: the figures are the suites' own.
5. `item_scorer`: the protocol's headline figures as a function of (model, resampled item indices), which
   metrics.model_comparison resamples to compare several models on the same items.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.schema import Schema, Setting, SettingError
from common.vocabulary import NLI
from dataset_io.formats import ExportOptions
from dataset_io.services.exporters import write_export
from jobs.services import JobError
from models_backend.checkpoint_spec import ENC_LABELS, ModelSpec
from models_backend.model_kinds import ModelKind
from models_backend.runs import BATCH, EVALUATE_STUDY, PRECISION

# Below this many reference items a figure's interval is wide enough to mislead: the result says so. (The
# alt-test's own minimum per annotator is 30 items as well, metrics.alt_test.MIN_ITEMS.)
MIN_ITEMS = 30
DEFEASIBLE_LABELS = ("strengthener", "weakener", "neutral")
UPDATE_TYPES = ("strengthener", "weakener")
SOURCES = ("adjudicated", "collected", "imported")


@dataclass(frozen=True)
class Protocol:
    task: str
    title: str
    model_kinds: tuple[str, ...]
    export_format: str  # the study's export the reference is read from
    suite: str  # the evaluation suite whose figures are reported
    headline: tuple[tuple[str, bool], ...]  # (figure, higher is better) compared across models


PROTOCOLS = {
    protocol.task: protocol
    for protocol in (
        Protocol(
            "unli_slider",
            "UNLI: Pearson r, Spearman rho, MSE against the study's probabilities",
            (ModelKind.UNLI.value,),
            "usnli",
            "unli",
            (("pearson", True), ("spearman", True), ("mse", False)),
        ),
        Protocol(
            "nli_label",
            "ChaosNLI: the model's distribution against the study's label distributions",
            (ModelKind.NLI.value,),
            "chaosnli",
            "chaos",
            (("jsd", False), ("kl", False), ("majority_acc", True), ("old_acc", True)),
        ),
        Protocol(
            "atom_validity",
            "Atomic NLI: logical consistency of full and atom labels on the valid atoms",
            (ModelKind.NLI.value,),
            "atoms",
            "nli-atoms",
            (("accuracy", True), ("consistency", True), ("induced_accuracy", True), ("validity_accuracy", True)),
        ),
        Protocol(
            "defeasible_atom",
            "Defeasible atoms: full, atom and critical-atom accuracies, inferential consistency",
            (ModelKind.DEFEASIBLE.value,),
            "atoms",
            "defeasible",
            (("full_accuracy", True), ("atom_accuracy", True), ("critical_atom_accuracy", True)),
        ),
    )
}


def protocol_of(project) -> Protocol:
    protocol = PROTOCOLS.get(project.task.name)
    if protocol is None or (protocol.export_format == "chaosnli" and not project.task.label_distributions):
        raise JobError(
            f"study {project.slug}: a {project.task.label} study has no model evaluation here "
            f"(studies of these task types do: {', '.join(PROTOCOLS)})"
        )
    return protocol


# Checkpoints ---------------------------------------------------------------------------------------------


def label_order(protocol: Protocol, spec: ModelSpec) -> list[int]:
    """Where each of the protocol's labels sits among the checkpoint's outputs (ENC for NLI, strengthener,
    weakener[, neutral] for defeasible models); [] for a regressor. JobError naming the checkpoint when its
    kind or its labels do not fit the study."""
    if spec.kind.value not in protocol.model_kinds:
        raise JobError(
            f"model {spec.name}: a {spec.kind.value} checkpoint cannot be scored on a {protocol.task} study "
            f"(it takes {' or '.join(protocol.model_kinds)} checkpoints)"
        )
    if spec.kind is ModelKind.UNLI:
        return []
    # A defeasible model may also say "neutral" (the suite then scores atoms three-way).
    wanted, optional = (ENC_LABELS, ()) if spec.kind is ModelKind.NLI else (UPDATE_TYPES, ("neutral",))
    lowered = [name.lower() for name in spec.label_names]
    order, unmatched = [], []
    for label in (*wanted, *optional):
        matches = [i for i, name in enumerate(lowered) if name.startswith(label[:6])]
        if len(matches) == 1:
            order.append(matches[0])
        elif matches or label not in optional:
            unmatched.append(label)
    leftover = [name for i, name in enumerate(spec.label_names) if i not in order]
    if unmatched or leftover:
        raise JobError(
            f"model {spec.name}: its labels {', '.join(spec.label_names)} do not map to the study's "
            f"{', '.join(wanted)}{' (and optionally neutral)' if optional else ''}: "
            + (f"no single label for {', '.join(unmatched)}" if unmatched else f"{', '.join(leftover)} unknown")
        )
    return order


def spec_of(kind: str, labels: Mapping[int, str], name: str) -> ModelSpec:
    """A registry entry's kind and label map as the spec label_order reads (no folder needed)."""
    return ModelSpec(
        path=Path(name), kind=ModelKind(kind), label_names=tuple(labels[i] for i in sorted(labels)) if labels else ()
    )


# The reference -------------------------------------------------------------------------------------------


@dataclass
class Reference:
    """The study's settled items as the suite reads them. path: the filtered export; sources: how many
    reference values are adjudicated, collected or imported; items: how many items (atom studies: examples
    with at least one settled atom; `atoms` then counts the atoms)."""

    protocol: str
    path: Path
    items: int
    sources: dict[str, int]
    atoms: int | None = None
    collected_only: bool = False
    annotations: Path | None = None  # nli_label: every answer, for the alt-test
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> dict:
        return {
            "protocol": self.protocol,
            "items": self.items,
            **({"atoms": self.atoms} if self.atoms is not None else {}),
            "sources": self.sources,
            "collected_only": self.collected_only,
            "warnings": self.warnings,
        }


def stored_reference(described: dict, path: Path, annotations: Path | None) -> Reference:
    """A job's reference again, from its stored description and its input files."""
    return Reference(
        described["protocol"],
        Path(path),
        described["items"],
        described["sources"],
        atoms=described.get("atoms"),
        collected_only=described["collected_only"],
        annotations=annotations,
        warnings=described["warnings"],
    )


def _source(adjudicated: bool, collected: bool) -> str:
    return "adjudicated" if adjudicated else "collected" if collected else "imported"


def write_reference(project, folder: Path, collected_only: bool = False) -> Reference:
    """The study's settled items in `folder` (see the module's step 1); JobError when none is settled."""
    protocol = protocol_of(project)
    folder = Path(folder)
    export = folder / f"{project.slug}-export.{'csv' if protocol.export_format == 'usnli' else 'jsonl'}"
    write_export(project, protocol.export_format, export, options=ExportOptions(study_gold=True))
    reference = {"usnli": _usnli_reference, "chaosnli": _chaos_reference, "atoms": _atoms_reference}[
        protocol.export_format
    ](protocol, export, folder / f"{project.slug}-reference.{export.suffix[1:]}", collected_only)
    export.unlink()
    if reference.items == 0:
        raise JobError(
            f"study {project.slug} has no settled items to evaluate against"
            + (" from collected answers (collected answers only)" if collected_only else "")
        )
    if protocol.task == "nli_label":
        reference.annotations = folder / f"{project.slug}-annotations.jsonl"
        write_export(project, "annotations", reference.annotations)
    if reference.items < MIN_ITEMS:
        reference.warnings.append(
            f"only {reference.items} items: below {MIN_ITEMS}, the figures vary too much from one sample to the next "
            "to rank models"
        )
    return reference


def _usnli_reference(protocol, export: Path, path: Path, collected_only: bool) -> Reference:
    with export.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns, rows = reader.fieldnames or [], list(reader)
    kept, sources = [], dict.fromkeys(SOURCES, 0)
    for row in rows:
        if not row["unli"].strip() or (collected_only and row["unli_source"] != "collected"):
            continue
        sources[_source(row["adjudicated"] == "true", row["unli_source"] == "collected")] += 1
        kept.append(row)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
    return Reference(protocol.task, path, len(kept), sources, collected_only=collected_only)


def _chaos_reference(protocol, export: Path, path: Path, collected_only: bool) -> Reference:
    """The export's answered items. ChaosNLI's figures need a majority label and an original label on every
    item: an item whose labels tie for the most votes (and no author settled it) is left out, counted; one
    without an original label (collected, not imported) takes its majority label as that, so its "old"
    accuracy is its majority accuracy, counted too."""
    sources, kept, ties, without_old = dict.fromkeys(SOURCES, 0), 0, 0, 0
    with export.open(encoding="utf-8") as lines, path.open("w", encoding="utf-8") as out:
        for line in lines:
            record = json.loads(line)
            studio = record["nli_studio"]
            collected = studio["label_source"] == "collected"
            if studio.get("unanswered") or (collected_only and not collected):
                continue
            if record["majority_label"] is None:
                ties += 1
                continue
            if record["old_label"] is None:
                record["old_label"] = record["majority_label"]
                without_old += 1
                line = json.dumps(record) + "\n"
            sources[_source(studio["adjudicated"], collected)] += 1
            kept += 1
            out.write(line)
    reference = Reference(protocol.task, path, kept, sources, collected_only=collected_only)
    if ties:
        reference.warnings.append(f"{ties} items left out: their labels tie for the most votes and nobody settled them")
    if without_old:
        reference.warnings.append(
            f"{without_old} items have no original label: their majority label stands in for it (old_acc)"
        )
    return reference


def _atoms_reference(protocol, export: Path, path: Path, collected_only: bool) -> Reference:
    """Each atom's reference: its settled collected value, else (not with collected_only) its imported validity
    or effect; atoms with neither are left out, and examples left without atoms. Written as the atoms export's
    lines with `reference` and `reference_source` on each atom kept."""
    imported_field = "validity" if protocol.task == "atom_validity" else "effect"
    sources, items, atoms = dict.fromkeys(SOURCES, 0), 0, 0
    with export.open(encoding="utf-8") as lines, path.open("w", encoding="utf-8") as out:
        for line in lines:
            example = json.loads(line)
            kept = []
            for atom in example["atoms"]:
                aggregate = atom["nli_studio"]["aggregate"]
                if atom["collected"] is not None:
                    value, source = atom["collected"], _source(bool(aggregate.get("adjudicated")), True)
                elif not collected_only and atom[imported_field] not in (None, "", "unknown"):
                    value, source = atom[imported_field], "imported"
                else:
                    continue
                sources[source] += 1
                kept.append(
                    {
                        "text": atom["text"],
                        "validity": atom["validity"],
                        "reference": value,
                        "reference_source": source,
                    }
                )
            if kept:
                items, atoms = items + 1, atoms + len(kept)
                out.write(json.dumps({**{k: v for k, v in example.items() if k != "atoms"}, "atoms": kept}) + "\n")
    return Reference(protocol.task, path, items, sources, atoms=atoms, collected_only=collected_only)


# What the models read ------------------------------------------------------------------------------------


def read_reference(reference: Reference) -> list[dict]:
    """The reference's rows: U-SNLI CSV rows, ChaosNLI records, or atom-study examples."""
    with reference.path.open(encoding="utf-8", newline="") as handle:
        if reference.path.suffix == ".csv":
            return list(csv.DictReader(handle))
        return [json.loads(line) for line in handle]


def scored_examples(protocol: Protocol, rows: list[dict]) -> list[dict]:
    """Atom studies: the examples a suite can score (an NLI gold label; for defeasible studies an update of a
    known type). Others: every row."""
    if protocol.task == "atom_validity":
        return [row for row in rows if row.get("label") in NLI.labels]
    if protocol.task == "defeasible_atom":
        return [row for row in rows if row.get("update") and _update_type(row) in UPDATE_TYPES]
    return rows


def _update_type(row: dict) -> str:
    return row.get("update_type") or row.get("label") or ""


def model_inputs(protocol: Protocol, rows: list[dict]) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (first segments, second segments) each checkpoint reads for this protocol."""
    if protocol.task == "unli_slider":
        return {"pairs": ([r["pre"] for r in rows], [r["hyp"] for r in rows])}
    if protocol.task == "nli_label":
        return {"pairs": ([r["example"]["premise"] for r in rows], [r["example"]["hypothesis"] for r in rows])}
    atoms = [(row, atom["text"]) for row in rows for atom in row["atoms"]]
    if protocol.task == "atom_validity":
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
    folder: Path, inputs: dict, *, batch_size: int, precision: str, device: str | None, progress=None
) -> tuple[ModelSpec, dict[str, np.ndarray]]:
    """One checkpoint's outputs on every input set, with the prediction job's batched runner."""
    from models_backend.against_gold import trained_length
    from models_backend.devices import pick_device, pick_precision
    from models_backend.registry import inspect_checkpoint, load_model
    from models_backend.runner import predict_pairs

    spec = inspect_checkpoint(folder)
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
            progress=(lambda d, _t, base=done: progress(base + d, total)) if progress else None,
        )
        done += len(first)
    return spec, outputs


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
    if protocol.task == "unli_slider":
        path = folder / "predictions.csv"
        write_csv(path, [r["id"] for r in rows], outputs["pairs"], None)
        return {"predictions": path}
    if protocol.task == "nli_label":
        path = folder / "predictions.json"
        uids = [r["uid"] for r in rows]
        path.write_text(json.dumps(chaosnli_predictions(name, uids, outputs["pairs"][:, order])), encoding="utf-8")
        return {"predictions": path}
    records, position = [], 0
    if protocol.task == "atom_validity":
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
                    "gold_label": _update_type(row),
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


# The settings a page or the API may give (the Settings fields below, bar the command line's device and bucket
# folders); the checkpoints are picked apart.
SETTINGS = Schema(
    (
        BATCH,
        PRECISION,
        Setting("seed", "int", 0, "seed of the bootstrap and of the human baselines", minimum=0, maximum=2**32 - 1),
        Setting("bootstrap", "int", 1000, "resamples of the items for the intervals", minimum=100, maximum=100_000),
        Setting(
            "alt_test_min_items",
            "int",
            30,
            "label studies: items an annotator shares with others to be tested against the model",
            label="Alt-test: items per annotator",
            minimum=2,
            maximum=1_000_000,
        ),
        Setting("weighted", "bool", False, "defeasible studies: I_C weighted by bucket support"),
    )
)


@dataclass
class Settings:
    batch_size: int = 64
    precision: str = "auto"
    device: str | None = None
    seed: int = 0
    bootstrap: int = 1000
    alt_test_min_items: int = 30
    weighted: bool = False  # defeasible: I_C weighted by bucket support
    bucket_nli: str | None = None  # defeasible: NLI checkpoint folder for buckets of equivalent atoms
    bucket_embedder: str | None = None  # ... and the sentence encoder (default: the packaged MiniLM)


def suite_figures(
    protocol: Protocol, reference: Reference, files: dict[str, Path], name: str, settings: Settings, buckets=None
) -> dict:
    """The suite's figures for one model's files (evaluation.suites, as `evaluate <suite>` computes them)."""
    from evaluation import suites
    from evaluation.readers import RowError

    if protocol.task == "unli_slider":
        return suites.run_unli(reference.path, files["predictions"])
    if protocol.task == "nli_label":
        figures = suites.run_chaos(
            reference.path, files["predictions"], model=name, seed=settings.seed, bootstrap=settings.bootstrap
        )
        try:
            figures["alt_test"] = suites.run_alt_test(
                reference.annotations, files["predictions"], model=name, min_items=settings.alt_test_min_items
            )
        except RowError as error:  # too few annotators per item: the alt-test has nothing to test
            figures["alt_test"] = {"unavailable": str(error)}
        return figures
    if protocol.task == "atom_validity":
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

    if protocol.task == "unli_slider":
        unli = suites.load_unli(reference.path, files["predictions"])
        return len(unli.y_true), lambda idx: _pick(unli_scores(unli.y_true[idx], unli.y_pred[idx]), protocol)
    if protocol.task == "nli_label":
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
    if protocol.task == "atom_validity":
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


# The human baseline --------------------------------------------------------------------------------------


def human_baseline_figures(project, protocol: Protocol, seed: int = 0) -> dict:
    """Where people stand, from the study's worker answers (imported votes have no annotator): one held-out
    answer per item against the aggregate of the item's other answers (metrics.agreement.human_baseline),
    scored like the model. nli_label studies report the ChaosNLI split-half JSD beside each model instead
    (`human_split_jsd`)."""
    if protocol.task == "nli_label":
        return {"measure": "split-half JSD, in each model's figures (human_split_jsd)"}
    from annotation.services.analysis.agreement import load_annotations
    from metrics.agreement import human_baseline

    packed = load_annotations(project).values_by_item()
    if not ((~np.isnan(packed)).sum(axis=0) >= 2).any():
        return {"unavailable": "no item has two or more worker answers yet"}
    if protocol.task == "atom_validity":
        # valid / invalid coded 0 / 1, so the squared error of the held-out answer is 1 where it disagrees.
        baseline = human_baseline(packed, aggregate="majority", seed=seed)
        return {
            "measure": "held-out answer vs the majority of the others",
            "validity_accuracy": 1 - baseline["mse"],
            "items": baseline["units"],
        }
    baseline = human_baseline(packed, aggregate="median", seed=seed)
    return {
        "measure": "held-out answer vs the median of the others"
        + (" (effects -2..+2)" if protocol.task == "defeasible_atom" else ""),
        **{key: (None if np.isnan(baseline[key]) else baseline[key]) for key in ("pearson", "spearman", "mse")},
        "items": baseline["units"],
    }


# The whole evaluation ------------------------------------------------------------------------------------


def evaluate_study(
    reference: Reference,
    models: Mapping[str, str | Path],
    folder: Path,
    settings: Settings | None = None,
    *,
    human_baseline: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Every model's figures on the reference, under its name, the human baseline beside them and, with two
    or more models, their comparison on the same resampled items. Writes each model's suite files into
    `folder`/<name>."""
    from evaluation.suites import json_ready

    settings = settings or Settings()
    started = time.perf_counter()
    protocol = PROTOCOLS[reference.protocol]
    rows = read_reference(reference)
    scored = scored_examples(protocol, rows)
    if not scored:
        raise JobError(f"no reference item of this {protocol.task} study can be scored ({_unscored_reason(protocol)})")
    inputs = model_inputs(protocol, scored)
    buckets = _bucket_functions(settings) if protocol.task == "defeasible_atom" and settings.bucket_nli else None
    results, scorers = {}, {}
    for index, (name, model_folder) in enumerate(models.items()):
        if log:
            log(f"model {name}: {sum(len(first) for first, _ in inputs.values())} inputs")
        spec, outputs = predict_inputs(
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
        figures = suite_figures(protocol, reference, files, name, settings, buckets)
        extra: dict = {"weighted": settings.weighted, "binary_atoms": figures.get("atom_labels") == "binary"}
        if protocol.task == "atom_validity":
            extra["validity_judged_right"] = validity_judged_right(scored, outputs, order)
            flags = np.concatenate(extra["validity_judged_right"])
            figures |= {"validity_accuracy": float(flags.mean()), "validity_atoms": int(flags.size)}
        if spec.hypothesis_only:
            figures["hypothesis_only"] = True  # the hypothesis-only baseline of the UNLI paper
        results[name] = figures
        scorers[name] = item_scorer(protocol, files, reference, name, extra)
    result = {
        "study_protocol": protocol.task,
        "suite": protocol.suite,
        "reference": reference.describe()
        | ({"examples_not_scored": len(rows) - len(scored)} if len(rows) != len(scored) else {}),
        "models": results,
        "human_baseline": human_baseline or {},
        "seconds": round(time.perf_counter() - started, 3),
    }
    if len(models) >= 2:
        result["comparison"] = compare(protocol, scorers, settings)
    return json_ready(result)


def _unscored_reason(protocol: Protocol) -> str:
    if protocol.task == "atom_validity":
        return "logical consistency needs examples with an entailment, neutral or contradiction label"
    if protocol.task == "defeasible_atom":
        return "the defeasible figures need examples with an update of type strengthener or weakener"
    return "no row"


def _bucket_functions(settings: Settings):
    from models_backend.pipelines.equivalence import nli_entailment, sentence_embedder

    return sentence_embedder(settings.bucket_embedder, settings.device), nli_entailment(
        settings.bucket_nli, settings.device
    )


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


# Starting one --------------------------------------------------------------------------------------------


def model_names(folders_or_names: Sequence[str]) -> list[str]:
    """Each model's name in the result: its folder's (or registry entry's) name, numbered when two share one."""
    names: list[str] = []
    for raw in folders_or_names:
        name = Path(str(raw)).name or str(raw)
        names.append(name if name not in names else f"{name}-{sum(n.startswith(name) for n in names) + 1}")
    return names


def start_study_evaluation(
    project,
    user,
    checkpoints: Sequence[str],
    settings: Mapping | None = None,
    *,
    collected_only: bool = False,
    bucket_nli: str | None = None,
    bucket_embedder: str | None = None,
    queue: str | None = None,
    background: bool = True,
):
    """Check everything, then store and queue an `evaluate_study` job: the study's reference is written and
    copied into the job; each checkpoint (a registry key) is checked against the study's protocol (its kind
    and its labels). JobError with nothing stored when anything does not fit."""
    import tempfile

    from annotation.services import access
    from jobs.services import start_job
    from jobs.workers import listening
    from models_backend import catalog

    if not access.can_manage(user, project):
        raise JobError(f"study {project.slug} is not one of yours")
    protocol = protocol_of(project)
    if not checkpoints:
        raise JobError("Models: pick at least one checkpoint")
    picked = [catalog.resolve(user, key) for key in dict.fromkeys(checkpoints)]
    for checkpoint in picked:
        label_order(protocol, spec_of(checkpoint.kind, checkpoint.labels, checkpoint.name))
    names = model_names([c.name for c in picked])
    try:
        cleaned = SETTINGS.clean(dict(settings or {}))
    except SettingError as error:
        name, message = next(iter(error.errors.items()))
        raise JobError(f"{name}: {message}") from None
    params: dict = {
        "models": {name: f"model_{i}" for i, name in enumerate(names)},
        "checkpoints": {f"model_{i}": c.key for i, c in enumerate(picked)},
        "settings": cleaned,
        "collected_only": collected_only,
    }
    if bucket_nli:
        if protocol.task != "defeasible_atom":
            raise JobError("Bucket NLI model: buckets of equivalent atoms are for defeasible studies")
        params["checkpoints"]["bucket_nli"] = catalog.resolve(user, bucket_nli, (ModelKind.NLI.value,)).key
        if bucket_embedder:
            params["checkpoints"]["bucket_embedder"] = catalog.resolve(user, bucket_embedder, (catalog.ENCODER,)).key
    with tempfile.TemporaryDirectory() as scratch:
        reference = write_reference(project, Path(scratch), collected_only)
        rows = read_reference(reference)
        if not scored_examples(protocol, rows):
            raise JobError(f"study {project.slug}: no settled item can be scored ({_unscored_reason(protocol)})")
        params["reference"] = reference.describe()
        params["human_baseline"] = human_baseline_figures(project, protocol, int(params["settings"].get("seed", 0)))
        inputs = {"reference": reference.path}
        if reference.annotations is not None:
            inputs["annotations"] = reference.annotations
        return start_job(
            EVALUATE_STUDY,
            params,
            user,
            project=project,
            inputs=inputs,
            queue=queue or ("gpu" if listening("gpu") else "default"),
            background=background,
        )


def run_job(job, progress) -> dict:
    """The job: its checkpoints already materialised into folders (runs._model_job)."""
    from jobs.running import output_file

    params = job.params
    has_annotations = any(entry["role"] == "annotations" for entry in job.inputs)
    reference = stored_reference(
        params["reference"],
        job.input_path("reference"),
        job.input_path("annotations") if has_annotations else None,
    )
    settings = Settings(
        **params["settings"],
        bucket_nli=params.get("bucket_nli"),
        bucket_embedder=params.get("bucket_embedder"),
    )
    folder = output_file(job, "study-evaluation")
    folder.mkdir(parents=True, exist_ok=True)
    models = {name: params[param] for name, param in params["models"].items()}
    return evaluate_study(
        reference,
        models,
        folder,
        settings,
        human_baseline=params.get("human_baseline"),
        progress=progress,
        log=job.write_log,
    )


def evaluate_folders(
    project,
    folders: Sequence[str | Path],
    output: Path,
    settings: Settings | None = None,
    *,
    collected_only: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The command line's way: checkpoint folders on this host, run here and now, nothing stored. Every
    checkpoint is checked against the study before any runs."""
    import tempfile

    from models_backend.registry import inspect_checkpoint

    settings = settings or Settings()
    protocol = protocol_of(project)
    for folder in folders:
        label_order(protocol, inspect_checkpoint(folder))
    with tempfile.TemporaryDirectory() as scratch:
        reference = write_reference(project, Path(scratch), collected_only)
        return evaluate_study(
            reference,
            dict(zip(model_names([str(f) for f in folders]), folders)),
            output,
            settings,
            human_baseline=human_baseline_figures(project, protocol, settings.seed),
            progress=progress,
        )


def headline_rows(result: dict) -> list[dict]:
    """One row per model with the protocol's headline figures (the page's and the command's summary)."""
    protocol = PROTOCOLS[result["study_protocol"]]
    return [
        {"model": name, **{figure: figures.get(figure) for figure, _ in protocol.headline}}
        for name, figures in result["models"].items()
    ]
