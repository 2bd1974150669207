"""Which evaluation a study gets, from its task type's own flags (never its name): the suite whose figures
it reports, the checkpoints it takes, the export its reference is read from, its headline figures; and the
settings an evaluation takes. No heavy import: the pages load this at start."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from common.schema import Schema, Setting
from jobs.services import JobError
from models_backend.checkpoint_spec import ENC_LABELS, ModelSpec
from models_backend.model_kinds import ModelKind
from models_backend.runs import BATCH, PRECISION

EVALUATE_STUDY = "evaluate_study"  # the job kind (registered by .jobs)
# Below this many reference items a figure's interval is wide enough to mislead: the result says so. (The
# alt-test's own minimum per annotator is 30 items as well, metrics.alt_test.MIN_ITEMS.)
MIN_ITEMS = 30
DEFEASIBLE_LABELS = ("strengthener", "weakener", "neutral")
UPDATE_TYPES = ("strengthener", "weakener")


@dataclass(frozen=True)
class Protocol:
    title: str
    model_kinds: tuple[str, ...]
    export_format: str  # the study's export the reference is read from
    suite: str  # the evaluation suite whose figures are reported
    headline: tuple[tuple[str, bool], ...]  # (figure, higher is better) compared across models


# Keyed by the suite whose figures each reports.
PROTOCOLS = {
    protocol.suite: protocol
    for protocol in (
        Protocol(
            "UNLI: Pearson r, Spearman rho, MSE against the study's probabilities",
            (ModelKind.UNLI.value,),
            "usnli",
            "unli",
            (("pearson", True), ("spearman", True), ("mse", False)),
        ),
        Protocol(
            "ChaosNLI: the model's distribution against the study's label distributions",
            (ModelKind.NLI.value,),
            "chaosnli",
            "chaos",
            (("jsd", False), ("kl", False), ("majority_acc", True), ("old_acc", True)),
        ),
        Protocol(
            "Atomic NLI: logical consistency of full and atom labels on the valid atoms",
            (ModelKind.NLI.value,),
            "atoms",
            "nli-atoms",
            (("accuracy", True), ("consistency", True), ("induced_accuracy", True), ("validity_accuracy", True)),
        ),
        Protocol(
            "Defeasible atoms: full, atom and critical-atom accuracies, inferential consistency",
            (ModelKind.DEFEASIBLE.value,),
            "atoms",
            "defeasible",
            (("full_accuracy", True), ("atom_accuracy", True), ("critical_atom_accuracy", True)),
        ),
    )
}


def protocol_of(project) -> Protocol:
    """The study's protocol, asked of its task type: probabilities (UNLI), label distributions (ChaosNLI), or
    per-atom judgments whose reference is each atom's validity (atomic NLI) or the update's effect on it
    (defeasible atoms). JobError for a study of any other kind."""
    task = project.task
    if task.probability_answers:
        suite = "unli"
    elif task.label_distributions:
        suite = "chaos"
    elif task.per_atom:
        suite = {"validity": "nli-atoms", "effect": "defeasible"}.get(task.atom_reference_field, "")
    else:
        suite = ""
    if suite not in PROTOCOLS:
        raise JobError(
            f"study {project.slug}: a {task.label} study has no model evaluation here (studies with "
            "probabilities, label distributions, atom validity or atom effects do)"
        )
    return PROTOCOLS[suite]


def takes_checkpoint_kind(project, kind: str) -> bool:
    """Whether the study has an evaluation and it takes checkpoints of this kind (the checkpoints page lists
    these studies, through models_backend.study_evaluation_link)."""
    try:
        return kind in protocol_of(project).model_kinds
    except JobError:
        return False


# Checkpoints ---------------------------------------------------------------------------------------------


def check_baseline(protocol: Protocol) -> None:
    """A hypothesis-only baseline is the U-SNLI paper's: slider (UNLI) studies only."""
    if protocol.suite != "unli":
        raise JobError("Hypothesis-only baseline: only probability (UNLI) studies have one")


def label_order(protocol: Protocol, spec: ModelSpec) -> list[int]:
    """Where each of the protocol's labels sits among the checkpoint's outputs (ENC for NLI, strengthener,
    weakener[, neutral] for defeasible models); [] for a regressor. JobError naming the checkpoint when its
    kind or its labels do not fit the study."""
    if spec.kind.value not in protocol.model_kinds:
        raise JobError(
            f"model {spec.name}: a {spec.kind.value} checkpoint cannot be scored on this study "
            f"(its {protocol.suite} evaluation takes {' or '.join(protocol.model_kinds)} checkpoints)"
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


def model_names(folders_or_names: Sequence[str]) -> list[str]:
    """Each model's name in the result: its folder's (or registry entry's) name, numbered when two share one."""
    names: list[str] = []
    for raw in folders_or_names:
        name = Path(str(raw)).name or str(raw)
        names.append(name if name not in names else f"{name}-{sum(n.startswith(name) for n in names) + 1}")
    return names


def headline_rows(result: dict) -> list[dict]:
    """One row per model with the protocol's headline figures (the page's and the command's summary), and one
    for the hypothesis-only baseline where there is one."""
    protocol = PROTOCOLS[result["study_protocol"]]
    rows = [
        {"model": name, **{figure: figures.get(figure) for figure, _ in protocol.headline}}
        for name, figures in result["models"].items()
    ]
    baseline = result.get("hypothesis_only_baseline")
    if baseline:  # its own row, never among the models compared
        rows.append(
            {
                "model": f"{baseline['model']} (hypothesis-only baseline)",
                **{figure: baseline.get(figure) for figure, _ in protocol.headline},
            }
        )
    return rows
