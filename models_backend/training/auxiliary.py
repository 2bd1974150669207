"""Auxiliary training data for UNLI, read from the shared data folder when it is there.

- SNLI labels and ChaosNLI 100-vote label distributions become surrogate probabilities (regression targets);
- delta-NLI updates become ranking pairs: (premise + strengthener, hypothesis) should score above
  (premise + weakener, hypothesis), the same hypothesis on both sides, so only the premise can tell them apart.

No auxiliary row may share a premise with the evaluation set: such rows are dropped and counted.
"""

from dataclasses import dataclass, field
from pathlib import Path

from ..dataio import InputError, PairRow, iter_records, read_pairs

# Mean U-SNLI probability per SNLI class (U-SNLI paper), the regression target for a categorical label.
SURROGATE_SCORES = {"entailment": 0.9272, "neutral": 0.4250, "contradiction": 0.0209}

# The project reads shared data from ../shared/data beside the repository (docs/models.md).
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SNLI_FILE = "snli/snli_dev_gold_only.jsonl"


def shared_file(relative: str) -> str | None:
    """Path of a file under the shared data folder, or None when it is not there."""
    path = SHARED_DATA / relative
    return str(path) if path.is_file() else None


def _key(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass
class AuxiliaryData:
    """Rows with a regression target, ranking rows, and ranking pairs (i, j): rank_rows[i] above rank_rows[j]."""

    rows: list[PairRow] = field(default_factory=list)
    targets: list[float] = field(default_factory=list)
    rank_rows: list[PairRow] = field(default_factory=list)
    rank_pairs: list[tuple[int, int]] = field(default_factory=list)
    dropped: int = 0


def snli_surrogates(path: str | Path, limit: int | None = None) -> dict[tuple[str, str], tuple[PairRow, float]]:
    """SNLI JSONL (premise, hypothesis, label/gold_label) -> {(premise, hypothesis): (row, surrogate target)}."""
    path = Path(path)
    pairs = {}
    for line_no, record in iter_records(path):
        if limit is not None and len(pairs) >= limit:
            break
        label = record.get("label", record.get("gold_label"))
        if label not in SURROGATE_SCORES:
            raise InputError(
                f"{path}:{line_no}: field 'label' must be one of {sorted(SURROGATE_SCORES)}, got {label!r}"
            )
        premise, hypothesis = (
            record.get("premise", record.get("sentence1")),
            record.get("hypothesis", record.get("sentence2")),
        )
        if not premise or not hypothesis:
            raise InputError(f"{path}:{line_no}: field 'premise' or 'hypothesis' is missing")
        pairs[(premise, hypothesis)] = (
            PairRow(id=str(line_no), premise=premise, hypothesis=hypothesis),
            SURROGATE_SCORES[label],
        )
    return pairs


def chaosnli_surrogates(path: str | Path) -> dict[tuple[str, str], tuple[PairRow, float]]:
    """ChaosNLI JSONL -> {(premise, hypothesis): (row, expected surrogate under the [e, n, c] vote distribution)}."""
    scores = [SURROGATE_SCORES[name] for name in ("entailment", "neutral", "contradiction")]
    pairs = {}
    for row in read_pairs(path):
        distribution = row.record.get("label_dist")
        if not isinstance(distribution, list) or len(distribution) != 3:
            raise InputError(f"{path}: item {row.id}: field 'label_dist' must be three probabilities [e, n, c]")
        pairs[(row.premise, row.hypothesis)] = (row, sum(p * s for p, s in zip(distribution, scores)))
    return pairs


def dnli_ranking(path: str | Path) -> tuple[list[PairRow], list[tuple[int, int]]]:
    """delta-NLI JSONL -> rows (premise + update, hypothesis) and pairs (strengthened, weakened) of one example.

    Each strengthener is paired with one weakener of the same premise and hypothesis (in file order, cycling
    through the weakeners), so every update is used at least once. Rows marked impossible are skipped.
    With U-SNLI test as the eval set use delta-NLI *dev*: 156 pairs of defeasible-snli/test.jsonl are U-SNLI
    test pairs.
    """
    updates: dict[tuple[str, str], dict[str, list[str]]] = {}
    for line_no, record in iter_records(path):
        if record.get("UpdateTypeImpossible"):
            continue
        kind = record.get("UpdateType")
        if kind not in ("strengthener", "weakener") or not all(
            record.get(k) for k in ("Premise", "Hypothesis", "Update")
        ):
            raise InputError(
                f"{path}:{line_no}: expected Premise, Hypothesis, Update and UpdateType strengthener/weakener"
            )
        group = updates.setdefault((record["Premise"], record["Hypothesis"]), {"strengthener": [], "weakener": []})
        group[kind].append(record["Update"])
    rows, pairs = [], []
    for (premise, hypothesis), group in updates.items():
        strong, weak = group["strengthener"], group["weakener"]
        if not strong or not weak:
            continue
        offset = len(rows)
        rows += [
            PairRow(
                id=f"dnli{offset + i}",
                premise=f"{premise} {update}",
                hypothesis=hypothesis,
                record={"premise": premise},
            )
            for i, update in enumerate(strong + weak)
        ]
        for k in range(max(len(strong), len(weak))):
            pairs.append((offset + k % len(strong), offset + len(strong) + k % len(weak)))
    return rows, pairs


def load_auxiliary(
    snli: str | None,
    chaosnli: list[str],
    dnli: str | None,
    *,
    max_snli: int | None,
    eval_premises: set[str],
) -> AuxiliaryData:
    """Regression rows (SNLI surrogates, replaced by the ChaosNLI expectation where ChaosNLI has the pair) and
    delta-NLI ranking pairs, without any row whose premise is an evaluation premise."""
    held_out = {_key(p) for p in eval_premises}
    by_pair = snli_surrogates(snli, max_snli) if snli else {}
    for path in chaosnli:
        by_pair.update(chaosnli_surrogates(path))
    data = AuxiliaryData()
    for row, target in by_pair.values():
        if _key(row.premise) in held_out:
            data.dropped += 1
            continue
        data.rows.append(row)
        data.targets.append(target)
    if dnli:
        rows, pairs = dnli_ranking(dnli)
        kept = [i for i, row in enumerate(rows) if _key(row.record["premise"]) not in held_out]
        data.dropped += len(rows) - len(kept)
        position = {old: new for new, old in enumerate(kept)}
        data.rank_rows = [rows[i] for i in kept]
        data.rank_pairs = [(position[i], position[j]) for i, j in pairs if i in position and j in position]
    return data
