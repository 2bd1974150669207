"""Label variation of a project: the explanations of its labels, imported (VariErr, LiveNLI records kept in
Example.source_data) or collected (a task type that `explains_labels`, validated in its linked project),
VariErr's classification of each label as supported variation or error, and the report built on them.

One reader of explanations for the report, the exports (`label_verdicts`) and the figures: `explanations`.
It reads in a fixed number of queries whatever the project's size: one for imported records, one for
collected answers, one for their validators' votes, one for their authors' self-judgments. The metrics are
metrics.variation's.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from annotation.models import Annotation, Example, Project
from common.vocabulary import NLI, livenli_labels, to_label
from dataset_io.services.provenance import annotator_id
from label_variation.services.self_judgments import has_self_check, self_check_open, self_judgments
from metrics.variation import (
    ERROR,
    PENDING,
    SUPPORTED,
    UNDECIDED,
    Explanation,
    by_item,
    classify_item,
    distributions,
    explanation_lengths,
    has_variation,
    judgment_alpha,
    judgment_counts,
    variation_split,
)

LABELS = NLI.labels
User = get_user_model()


@dataclass
class Explained:
    """What a project's explanations are read into: the explanations, and each imported item's ChaosNLI
    label counts ({label: count}) where its record carries them."""

    explanations: list[Explanation] = field(default_factory=list)
    chaosnli: dict[str, dict[str, int]] = field(default_factory=dict)


def _spans(highlight: dict) -> tuple[tuple[int, int], ...]:
    """LiveNLI's highlight column ({"entities": [{"startIndex", "endIndex", ...}]}) as sorted spans."""
    return tuple(sorted((entity["startIndex"], entity["endIndex"]) for entity in highlight.get("entities", ())))


def _read_varierr(key: str, record: dict, into: Explained) -> None:
    """A VariErr record: per label list (long names), each explanation's annotator, reason and judgments;
    the annotator's judgment of their own explanation is its self-judgment, the others' are peer ones."""
    for long_name in ("entailment", "neutral", "contradiction"):
        label = to_label(long_name, LABELS)
        for entry in record.get(long_name, ()):
            author = entry["annotator"]
            judgments = entry.get("judgments", ())
            own = [judgment["makes_sense"] for judgment in judgments if judgment["annotator"] == author]
            peers = [judgment for judgment in judgments if judgment["annotator"] != author]
            into.explanations.append(
                Explanation(
                    item_key=key,
                    label=label,
                    author=f"varierr:{author}",
                    text=entry["reason"],
                    peer_judgments=tuple(judgment["makes_sense"] for judgment in peers),
                    self_judgment=own[0] if own else None,
                    peer_judges=tuple(None if j["annotator"] is None else str(j["annotator"]) for j in peers),
                )
            )
    if isinstance(record.get("chaosnli_labels"), dict):
        into.chaosnli[key] = record["chaosnli_labels"]


def _read_livenli(key: str, record: dict, into: Explained) -> None:
    """A LiveNLI item (its rows in file order): each row is one worker's explanation of one or more labels
    (`multilabel`), with highlights; LiveNLI has no validation round, so no judgments."""
    for row in record["rows"]:
        for label in livenli_labels(row["multilabel"]):
            into.explanations.append(
                Explanation(
                    item_key=key,
                    label=label,
                    author=f"livenli:{row['worker_id']}",
                    text=row["explanation"],
                    premise_spans=_spans(row["highlight_p"]),
                    hypothesis_spans=_spans(row["highlight_h"]),
                )
            )
        if isinstance(row.get("chaos_dist"), dict):
            into.chaosnli[key] = row["chaos_dist"]


IMPORTED_READERS = {"varierr": _read_varierr, "livenli": _read_livenli}


def read_record(source_format: str, key: str, record: dict, into: Explained | None = None) -> Explained:
    """The explanations (and ChaosNLI counts) of one imported record of `source_format` ("varierr": a line
    of varierr.json; "livenli": {"rows": [the uid's rows, parsed]}), added to `into` when given."""
    into = Explained() if into is None else into
    IMPORTED_READERS[source_format](key, record, into)
    return into


def _collected(project: Project, keys: Collection[str] | None, into: Explained) -> None:
    """The project's own answers (labels with explanations), with the "makes sense" votes of its linked
    validation project as peer judgments (their validators named by the study's anonymised annotator ids, as
    its exports name them) and the authors' self-check (label_variation.services.self_judgments) as self-judgments."""
    answers = Annotation.objects.counted().filter(item__project=project, worker__isnull=False)
    if keys is not None:
        answers = answers.filter(item__example__key__in=keys)
    rows = list(answers.order_by("id").values_list("id", "item__example__key", "worker_id", "value"))
    votes: dict[tuple[int, str], list[tuple[int, bool]]] = {}
    if project.validation_project_id is not None and rows:
        validated = Annotation.objects.counted().filter(
            item__project_id=project.validation_project_id, worker__isnull=False, item__example__origin__isnull=False
        )
        if keys is not None:
            validated = validated.filter(item__example__origin__item__example__key__in=keys)
        for origin, target, worker, value in validated.values_list(
            "item__example__origin_id", "item__example__origin_target", "worker_id", "value"
        ):
            votes.setdefault((origin, target), []).append((worker, bool(value["makes_sense"])))
    own_judgments = self_judgments(project, keys) if rows else {}
    can_still_judge = bool(rows) and self_check_open(project)
    judge_ids: dict[int, str | None] = {}
    for answer_id, key, worker, value in rows:
        for label, explained in project.task.explained_labels(value).items():
            judged = votes.get((answer_id, label), [])
            own = [makes_sense for judge, makes_sense in judged if judge == worker]
            peers = [(judge, makes_sense) for judge, makes_sense in judged if judge != worker]
            for judge, _ in peers:
                if judge not in judge_ids:
                    judge_ids[judge] = annotator_id(project, judge)
            if (answer_id, label) in own_judgments:  # the author's self-check (VariErr's round 2)
                own = [own_judgments[answer_id, label]]
            into.explanations.append(
                Explanation(
                    item_key=key,
                    label=label,
                    author=f"worker:{worker}",
                    text=explained["explanation"],
                    premise_spans=tuple(map(tuple, explained.get("premise_spans", ()))),
                    hypothesis_spans=tuple(map(tuple, explained.get("hypothesis_spans", ()))),
                    peer_judgments=tuple(makes_sense for _, makes_sense in peers),
                    self_judgment=own[0] if own else None,
                    peer_judges=tuple(judge_ids[judge] for judge, _ in peers),
                    self_check_pending=can_still_judge and not own,
                )
            )


def read_explanations(project: Project, keys: Collection[str] | None = None) -> Explained:
    """Every explanation of the project (of the examples with these keys only, when given): imported records
    first, in example order, then collected answers in the order given."""
    into = Explained()
    imported = Example.objects.filter(project=project, source_format__in=IMPORTED_READERS).exclude(items__is_gold=True)
    if keys is not None:
        imported = imported.filter(key__in=keys)
    for key, source_format, record in imported.values_list("key", "source_format", "source_data").iterator(
        chunk_size=2000
    ):
        read_record(source_format, key, record, into)
    if project.task.explains_labels:
        _collected(project, keys, into)
    return into


def explanations(project: Project) -> list[Explanation]:
    """Every explanation of the project, imported and collected (see `read_explanations`)."""
    return read_explanations(project).explanations


def study_self_check(project: Project) -> dict | None:
    """The study page's view of the writers' self-check (`self_check_progress`); None without one."""
    if not has_self_check(project):
        return None
    return self_check_progress(project, explanations(project))


def peer_majority(project: Project) -> bool:
    """Whether the study's author picked this app's peer-majority rule for items without self-judgments (its
    task type says); VariErr's rule otherwise."""
    return project.task.peer_majority(project.options)


def label_verdicts(project: Project, keys: Collection[str] | None = None) -> dict[str, dict[str, str]]:
    """{example key: {label: "supported" | "error" | "undecided" | "pending"}} for the project's items with
    explanations (only those with these keys, when given: an export's batch), the exports' `label_verdicts`."""
    rule = peer_majority(project)
    return {
        key: classify_item(labels, rule)
        for key, labels in by_item(read_explanations(project, keys).explanations).items()
    }


def self_check_progress(project: Project, explained: list[Explanation]) -> dict | None:
    """How far the writers' self-check has come, from the study's collected explanations: {"open" (writers can
    still judge), "writers": [{"writer" (username), "judged", "pending"}], "items": {key: {"judged",
    "pending"}}}; None for a study without a self-check."""
    if not has_self_check(project):
        return None
    writers: dict[int, dict[str, int]] = {}
    items: dict[str, dict[str, int]] = {}
    for explanation in explained:
        if not explanation.author.startswith("worker:"):
            continue
        judged = explanation.self_judgment is not None
        for counts in (
            writers.setdefault(int(explanation.author.removeprefix("worker:")), {"judged": 0, "pending": 0}),
            items.setdefault(explanation.item_key, {"judged": 0, "pending": 0}),
        ):
            counts["judged"] += judged
            counts["pending"] += not judged
    names = dict(User.objects.filter(pk__in=writers).values_list("pk", "username"))
    return {
        "open": self_check_open(project),
        "writers": sorted(
            ({"writer": names[pk], **counts} for pk, counts in writers.items()), key=lambda w: w["writer"]
        ),
        "items": items,
    }


def _chaosnli_distribution(counts: dict[str, int] | None) -> tuple[float, ...] | None:
    if not counts:
        return None
    ordered = [counts.get(label, 0) for label in LABELS]
    total = sum(ordered)
    return tuple(count / total for count in ordered) if total else None


def variation_report(project: Project) -> dict:
    """The project's label variation: {"label_order": (label, ...), "items": [...], "study": {...}}.

    Each item: {"key", "round_one", "validated", "chaosnli" (distributions, or None), "verdicts"
    {label: verdict}, "variation" (two or more supported labels), "error" (a label judged an error)}; the
    distributions list the labels in `label_order`.
    The study: {"items", "variation", "error", "both", "undecided" (item counts), "explanations" (label and
    explanation pairs), "judgments", "lengths" (metrics.variation.explanation_lengths), "alpha"
    (Krippendorff's alpha of the "makes sense" judgments, NaN when it cannot be computed)}.
    """
    read = read_explanations(project)
    grouped = by_item(read.explanations)
    rule = peer_majority(project)
    verdicts = {key: classify_item(labels, rule) for key, labels in grouped.items()}
    shares = distributions(read.explanations, LABELS, rule)
    items = [
        {
            "key": key,
            **shares[key],
            "chaosnli": _chaosnli_distribution(read.chaosnli.get(key)),
            "verdicts": verdicts[key],
            "variation": has_variation(verdicts[key]),
            "error": ERROR in verdicts[key].values(),
        }
        for key in grouped
    ]
    return {
        "label_order": LABELS,
        "items": items,
        "study": {
            **variation_split(verdicts),
            "explanations": len(read.explanations),
            "judgments": int(judgment_counts(read.explanations).sum()),
            "lengths": explanation_lengths(read.explanations),
            "alpha": judgment_alpha(read.explanations),
        },
        "rule": "peer_majority" if rule else "varierr",
        "self_check": self_check_progress(project, read.explanations),
    }


def _shares(distribution: Iterable[float] | None) -> str:
    return "—" if distribution is None else " / ".join(f"{share:.2f}" for share in distribution)


def _share_of(count: int, total: int) -> str:
    return f"{count} ({count / total:.0%})" if total else "0"


def report_json(project: Project, report: dict) -> dict:
    """`variation_report` as the API and `manage.py variation_report --json` give it: the same figures, with
    the project named and Krippendorff's alpha None where it cannot be computed (JSON has no NaN)."""
    alpha = report["study"]["alpha"]
    return {
        "project": project.slug,
        **report,
        "label_order": list(report["label_order"]),
        "study": {**report["study"], "alpha": None if math.isnan(alpha) else float(alpha)},
    }


def report_tables(project: Project, report: dict | None = None) -> list[dict]:
    """The report's label variation tables (TaskType.report_tables' shape): the study's figures and each
    item's distributions and verdicts; none for a project without explanations. `report`: the project's
    `variation_report`, where the caller has it already."""
    report = variation_report(project) if report is None else report
    if not report["items"]:
        return []
    study, lengths = report["study"], report["study"]["lengths"]
    items = study["items"]
    alpha = study["alpha"]
    order = " / ".join(NLI.name(label) for label in report["label_order"])
    words = (
        "—"
        if lengths["mean"] is None
        else f"mean {lengths['mean']:.1f}, median {lengths['median']:g} ({lengths['min']}–{lengths['max']})"
    )
    study_rows = [
        ["Items with explanations", items],
        ["Label–explanation pairs", study["explanations"]],
        ["Items with variation (two or more supported labels)", _share_of(study["variation"], items)],
        ["Items with a label judged an error", _share_of(study["error"], items)],
        ["Items with a label still undecided", _share_of(study["undecided"], items)],
        ["Items with a label waiting for its writer's self-check", _share_of(study["pending"], items)],
        [f"Explanation length in words ({lengths['explanations']} distinct explanations)", words],
        [
            f"Validators' agreement on “makes sense”, Krippendorff's alpha (nominal, {study['judgments']} judgments)",
            "—" if math.isnan(alpha) else f"{alpha:.3f}",
        ],
    ]

    def labels_with(verdicts: dict, verdict: str) -> str:
        return ", ".join(NLI.name(label) for label in report["label_order"] if verdicts.get(label) == verdict) or "—"

    item_rows = [
        [
            item["key"],
            _shares(item["round_one"]),
            _shares(item["validated"]),
            _shares(item["chaosnli"]),
            labels_with(item["verdicts"], SUPPORTED),
            labels_with(item["verdicts"], ERROR),
            labels_with(item["verdicts"], UNDECIDED),
            labels_with(item["verdicts"], PENDING),
        ]
        for item in report["items"]
    ]
    rule = (
        "VariErr's rule: a label is an error when none of its explanations was judged “makes sense” by its own "
        "author; a label whose writer can still self-check waits (pending), never an error. "
        + (
            "Where nobody in an item judged their own, this study uses this app's peer-majority rule (not "
            "VariErr's): a label is supported when one explanation has a strict majority of validators judging "
            "it “makes sense”, an error when none has (undecided while judgments are missing)."
            if report["rule"] == "peer_majority"
            else "An item where nobody judged their own stays undecided (the study's settings offer this "
            "app's peer-majority rule instead)."
        )
    )
    progress = report.get("self_check")
    self_check_tables = []
    if progress is not None:
        self_check_tables.append(
            {
                "title": "Self-check: each writer's judgments of their own explanations",
                "columns": ["Writer", "Judged", "Still to judge"],
                "rows": [[row["writer"], row["judged"], row["pending"]] for row in progress["writers"]],
                "empty": "No explanations written yet.",
                "note": "Each writer judges their own label–explanation pairs (VariErr's round 2) on their "
                "“Your explanations” page. "
                + ("" if progress["open"] else "The study is closed: pairs not judged now count as withdrawn."),
            }
        )
    return [
        {
            "title": "Label variation: the study",
            "columns": ["Figure", "Value"],
            "rows": study_rows,
            "empty": "No explanations yet.",
            "note": rule,
        },
        {
            "title": "Label variation per item",
            "columns": [
                "Item",
                f"Round 1 ({order})",
                "Validated (errors removed)",
                "ChaosNLI",
                "Supported",
                "Errors",
                "Undecided",
                "Pending",
            ],
            "rows": item_rows,
            "empty": "No explanations yet.",
            "note": "Round 1: each label's share of the (annotator, label) pairs: an annotator who gave two "
            "labels counts once for each. Validated: the same with the labels judged errors removed, "
            "renormalised. ChaosNLI: the item's 100 crowd labels, where imported. Pending: waiting for the "
            "writer's self-check.",
        },
        *self_check_tables,
    ]
