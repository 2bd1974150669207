"""A study's reference: its settled items as the suite reads them, where each value comes from, and where
people stand (the held-out human baseline)."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from common.vocabulary import NLI
from dataset_io.formats import ExportOptions
from dataset_io.services.exporters import write_export
from evaluation.study_evaluation.protocols import MIN_ITEMS, UPDATE_TYPES, Protocol, protocol_of
from jobs.services import JobError

SOURCES = ("adjudicated", "collected", "imported")


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
    annotations: Path | None = None  # label distributions: every answer, for the alt-test
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
    if protocol.suite == "chaos":
        reference.annotations = folder / f"{project.slug}-annotations.jsonl"
        write_export(project, "annotations", reference.annotations)
        _keep_reference_items(reference.path, reference.annotations)
    if reference.items < MIN_ITEMS:
        reference.warnings.append(
            f"only {reference.items} items: below {MIN_ITEMS}, the figures vary too much from one sample to the next "
            "to rank models"
        )
    return reference


def _keep_reference_items(reference: Path, annotations: Path) -> None:
    """The answers to the reference's items only: the alt-test needs the model's prediction on every item it
    reads, and an item left out of the reference (its labels tie) has none."""
    with reference.open(encoding="utf-8") as lines:
        uids = {json.loads(line)["uid"] for line in lines}
    with annotations.open(encoding="utf-8") as lines:
        kept = [line for line in lines if json.loads(line)["id"] in uids]
    annotations.write_text("".join(kept), encoding="utf-8")


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
    return Reference(protocol.suite, path, len(kept), sources, collected_only=collected_only)


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
    reference = Reference(protocol.suite, path, kept, sources, collected_only=collected_only)
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
    imported_field = "validity" if protocol.suite == "nli-atoms" else "effect"
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
    return Reference(protocol.suite, path, items, sources, atoms=atoms, collected_only=collected_only)


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
    if protocol.suite == "nli-atoms":
        return [row for row in rows if row.get("label") in NLI.labels]
    if protocol.suite == "defeasible":
        return [row for row in rows if row.get("update") and update_type(row) in UPDATE_TYPES]
    return rows


def update_type(row: dict) -> str:
    return row.get("update_type") or row.get("label") or ""


# The human baseline --------------------------------------------------------------------------------------


def human_baseline_figures(project, protocol: Protocol, seed: int = 0) -> dict:
    """Where people stand, from the study's worker answers (imported votes have no annotator): one held-out
    answer per item against the aggregate of the item's other answers (metrics.agreement.human_baseline),
    scored like the model. Studies of label distributions report the ChaosNLI split-half JSD beside each model instead
    (`human_split_jsd`)."""
    if protocol.suite == "chaos":
        return {"measure": "split-half JSD, in each model's figures (human_split_jsd)"}
    import numpy as np

    from annotation.services.analysis.agreement import load_annotations
    from metrics.agreement import human_baseline

    packed = load_annotations(project).values_by_item()
    if not ((~np.isnan(packed)).sum(axis=0) >= 2).any():
        return {"unavailable": "no item has two or more worker answers yet"}
    if protocol.suite == "nli-atoms":
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
        + (" (effects -2..+2)" if protocol.suite == "defeasible" else ""),
        **{key: (None if np.isnan(baseline[key]) else baseline[key]) for key in ("pearson", "spearman", "mse")},
        "items": baseline["units"],
    }


def unscored_reason(protocol: Protocol) -> str:
    if protocol.suite == "nli-atoms":
        return "logical consistency needs examples with an entailment, neutral or contradiction label"
    if protocol.suite == "defeasible":
        return "the defeasible figures need examples with an update of type strengthener or weakener"
    return "no row"
