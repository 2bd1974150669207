"""Figures from the released label-variation files, read by the app's own reader of explanations
(label_variation.services.variation.read_record) and scored by metrics.variation.

VariErr NLI (../shared/data/varierr/varierr.json): items, explanations and judgments against the paper's
counts; VariErr's rule against the file's `error_labels` (agreement and every disagreement); the error vs
variation split; the validators' agreement on "makes sense"; explanation lengths; peer judgments as an error
detector (AP, P@50, P@100, R@100) next to the release's results.tsv. LiveNLI (../shared/data/livenli/
livenli.csv): rows, items, labels per row, explanation lengths.

Usage: python benchmarks/variation_figures.py [--json]
With --json the last line of stdout is one JSON object {"varierr": {...}, "livenli": {...}}.
"""

import ast
import csv
import json
import os
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The reader's module loads the app's models; nothing here touches a database or serves a request.
os.environ.setdefault("DEBUG", "true")

from benchmarks._common import SHARED_DATA, argument_parser  # noqa: E402

PAPER_JUDGMENTS = 7732  # the VariErr README's count of validity judgments
LABEL_LISTS = ("entailment", "neutral", "contradiction")
# results.tsv rows of the two peer baselines this script recomputes, by our name.
PEER_BASELINES = {"per_explanation": "peer_Heruistic_ratio_per_exp", "pooled": "peer_heuristic_ratio_all_exp"}
LIVENLI_LITERALS = ("chaos_dist", "highlight_p", "highlight_h")  # what the reader needs


def paper_scores(path: Path) -> dict[str, dict[str, str]]:
    """results.tsv as {method: {column: value as printed}} ("$41.8$" -> "41.8")."""
    with open(path, newline="") as table:
        return {
            row["Method"]: {column: value.strip("$") for column, value in row.items() if column != "Method"}
            for row in csv.DictReader(table, delimiter="\t")
        }


def varierr_figures(path: Path, results: Path) -> dict:
    from label_variation.services.variation import read_record
    from metrics.variation import (
        ERROR,
        classify_labels,
        detection_scores,
        explanation_lengths,
        judgment_alpha,
        judgment_counts,
        peer_error_scores,
        variation_split,
    )

    with open(path) as lines:
        records = [json.loads(line) for line in lines]
    explanations = [e for record in records for e in read_record("varierr", record["id"], record).explanations]
    judgments = int(judgment_counts(explanations).sum())
    per_explanation = Counter(len(e["judgments"]) for r in records for name in LABEL_LISTS for e in r[name])
    unjudged_by_author = [
        entry
        for record in records
        for name in LABEL_LISTS
        for entry in record[name]
        if all(judgment["annotator"] != entry["annotator"] for judgment in entry["judgments"])
    ]

    verdicts = classify_labels(explanations)
    given = {(r["id"], name[0]) for r in records for name in LABEL_LISTS if r[name]}
    ours = {(key, label) for key, labels in verdicts.items() for label, verdict in labels.items() if verdict == ERROR}
    theirs = {(r["id"], name[0]) for r in records for name in r["error_labels"]}
    disagreements = sorted(
        {
            "item": key,
            "label": label,
            "ours": "error" if (key, label) in ours else "supported",
            "file": "error" if (key, label) in theirs else "supported",
        }
        for key, label in ours ^ theirs
    )

    keys = [(r["id"], name[0]) for r in records for name in LABEL_LISTS if r[name]]  # the file's order
    truth = [key in theirs for key in keys]
    paper = paper_scores(results)
    detection = {}
    for name, pooled in (("per_explanation", False), ("pooled", True)):
        scores = peer_error_scores(explanations, pooled=pooled)
        ranked = [scores[key] for key in keys]
        measured = detection_scores(truth, ranked, ks=(50, 100))
        detection[name] = {
            "ap": round(100 * measured["ap"], 1),
            "p@50": round(100 * measured["precision_at"][50], 1),
            "p@100": round(100 * measured["precision_at"][100], 1),
            "r@100": round(100 * measured["recall_at"][100], 1),
            # P@k and R@k depend on how ties are ordered where this many labels share the top score.
            "tied_at_top": ranked.count(max(ranked)),
            "results_tsv": paper[PEER_BASELINES[name]],
        }
    return {
        "items": len(records),
        "explanations": len(explanations),
        "judgments": judgments,
        "paper_judgments": PAPER_JUDGMENTS,
        "explanations_x_4": 4 * len(explanations),
        "missing_judgments": 4 * len(explanations) - judgments,
        "explanations_by_judgments": dict(sorted(per_explanation.items(), reverse=True)),
        "explanations_without_self_judgment": len(unjudged_by_author),
        "of_them_self_corrected": sum(entry["self_corrected"] for entry in unjudged_by_author),
        "labels": len(given),
        "error_labels_file": len(theirs),
        "error_labels_rule": len(ours),
        "rule_agrees_on_labels": len(given) - len(ours ^ theirs),
        "disagreements": disagreements,
        "split": variation_split(verdicts),
        "alpha_all_judgments": round(judgment_alpha(explanations), 4),
        "alpha_peer_judgments": round(judgment_alpha(explanations, include_self=False), 4),
        "explanation_words": explanation_lengths(explanations),
        "error_detection": detection,
        "random_ap": round(100 * len(theirs) / len(given), 1),
    }


def livenli_figures(path: Path) -> dict:
    """LiveNLI's rows grouped per uid in file order (the livenli format's record), the Python-literal
    columns parsed, then read by the app's reader."""
    from label_variation.services.variation import read_record
    from metrics.variation import explanation_lengths

    with open(path, newline="") as table:
        rows = list(csv.DictReader(table))
    items: dict[str, list[dict]] = {}
    for row in rows:
        parsed = {column: ast.literal_eval(row[column]) if row[column] else None for column in LIVENLI_LITERALS}
        items.setdefault(row["uid"], []).append({**row, **parsed})
    explanations = [e for uid, item in items.items() for e in read_record("livenli", uid, {"rows": item}).explanations]
    labels_per_row = Counter(len(row["multilabel"].split("|")) for row in rows)
    return {
        "rows": len(rows),
        "items": len(items),
        "workers": len({row["worker_id"] for row in rows}),
        "labels_per_row": dict(sorted(labels_per_row.items())),
        "label_explanation_pairs": len(explanations),
        "labels": dict(Counter(e.label for e in explanations)),
        "items_with_chaosnli": sum(any(row["chaos_dist"] for row in item) for item in items.values()),
        "explanation_words": explanation_lengths(explanations),
    }


def main() -> None:
    args = argument_parser(__doc__).parse_args()

    import django

    django.setup()
    figures = {
        "varierr": varierr_figures(SHARED_DATA / "varierr" / "varierr.json", SHARED_DATA / "varierr" / "results.tsv"),
        "livenli": livenli_figures(SHARED_DATA / "livenli" / "livenli.csv"),
    }
    if args.json:
        print(json.dumps(figures))
        return
    for dataset, values in figures.items():
        print(dataset)
        for key, value in values.items():
            print(f"  {key:<36} {value}")


if __name__ == "__main__":
    main()
