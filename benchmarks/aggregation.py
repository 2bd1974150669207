"""Benchmark: how often does each aggregation method recover ChaosNLI's 100-label majority from 3 or 5 labels?

ChaosNLI (SNLI and MNLI-matched) gives each item 100 labels as counts, without annotator ids, so the
annotators are simulated (seeded): a pool of --workers workers; each item is given k distinct workers drawn
uniformly from the pool. Two crowds:
- "faithful": every worker draws the item's label from its 100-label distribution (the workers are alike,
  so annotator models have no reliability differences to find);
- "spammers": the same, except that a --spammer-share of the pool answers uniformly at random.
Methods: majority vote, Wawa, Dawid-Skene, MACE and GLAD (metrics.annotator_models, the functions the app's
annotator models run). Recovery is metrics.annotator_models.expected_accuracy against the 100-label majority:
an item where a method's top labels tie counts 1/t when the majority is among the t tied labels. Items whose
100 labels themselves tie for the majority have no single answer and are left out (their number is printed).

Usage: python benchmarks/aggregation.py [--json] [--seed S] [--workers W] [--spammer-share P]
With --json the last line of stdout is {"results": [{"dataset", "crowd", "k", "items", "<method>": share,
...}], "tied_majorities": {dataset: n}, "workers", "spammer_share", "seed", "seconds", "load_average"}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks._common import SHARED_DATA, argument_parser, load_average, log  # noqa: E402
from metrics.annotator_models import METHODS, expected_accuracy, fit_annotator_models  # noqa: E402

DATASETS = {
    "snli": SHARED_DATA / "chaosnli" / "chaosNLI_snli.jsonl",
    "mnli": SHARED_DATA / "chaosnli" / "chaosNLI_mnli_m.jsonl",
}
ANNOTATORS_PER_ITEM = (3, 5)
CROWDS = ("faithful", "spammers")


def read_label_counts(path: Path) -> np.ndarray:
    """(n_items, 3) label counts of a ChaosNLI file, columns e, n, c."""
    with open(path, encoding="utf-8") as rows:
        return np.array([json.loads(line)["label_count"] for line in rows if line.strip()], dtype=np.int64)


def simulate(counts: np.ndarray, k: int, workers: int, spammers: np.ndarray, seed: int):
    """(items, workers, labels) answer arrays: k distinct workers per item; a spammer answers uniformly at
    random, any other worker draws from the item's 100-label distribution."""
    rng = np.random.default_rng(seed)
    n_items, n_categories = counts.shape
    assigned = np.argsort(rng.random((n_items, workers)), axis=1)[:, :k]
    distributions = counts / counts.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(np.repeat(distributions, k, axis=0), axis=1)
    faithful = (rng.random((n_items * k, 1)) > cumulative).sum(axis=1)
    uniform = rng.integers(0, n_categories, n_items * k)
    worker_ids = assigned.ravel()
    labels = np.where(spammers[worker_ids], uniform, np.minimum(faithful, n_categories - 1))
    return np.repeat(np.arange(n_items), k), worker_ids, labels


def run(counts: np.ndarray, k: int, workers: int, spammers: np.ndarray, seed: int) -> dict:
    top = counts.max(axis=1, keepdims=True)
    single = (counts == top).sum(axis=1) == 1
    items, worker_ids, labels = simulate(counts, k, workers, spammers, seed)
    # Workers the draw never used would have no answers: renumber the ones that have some.
    used, worker_codes = np.unique(worker_ids, return_inverse=True)
    models = fit_annotator_models(items, worker_codes, labels, len(counts), len(used), counts.shape[1], seed=seed)
    truth = counts.argmax(axis=1)
    row = {"items": int(single.sum())}
    for method in METHODS:
        row[method] = round(expected_accuracy(models.scores[method][single], truth[single]), 4)
    return row


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=50, help="simulated workers in the pool")
    parser.add_argument("--spammer-share", type=float, default=0.2, help="share of the pool answering at random")
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    spammer_mask = np.zeros(args.workers, dtype=bool)
    spammer_mask[rng.choice(args.workers, round(args.spammer_share * args.workers), replace=False)] = True
    results, tied = [], {}
    for dataset, path in DATASETS.items():
        counts = read_label_counts(path)
        tied[dataset] = int(((counts == counts.max(axis=1, keepdims=True)).sum(axis=1) > 1).sum())
        for crowd in CROWDS:
            spammers = spammer_mask if crowd == "spammers" else np.zeros(args.workers, dtype=bool)
            for k in ANNOTATORS_PER_ITEM:
                log(f"{dataset}, {crowd} crowd, {k} annotators per item")
                results.append(
                    {"dataset": dataset, "crowd": crowd, "k": k, **run(counts, k, args.workers, spammers, args.seed)}
                )
    figures = {
        "results": results,
        "tied_majorities": tied,
        "workers": args.workers,
        "spammer_share": args.spammer_share,
        "seed": args.seed,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": load_average(),
    }
    header = f"{'dataset':<8}{'crowd':<10}{'k':>3}{'items':>7}" + "".join(f"{method:>15}" for method in METHODS)
    print(header)
    for row in results:
        shares = "".join(f"{row[method]:>15.3f}" for method in METHODS)
        print(f"{row['dataset']:<8}{row['crowd']:<10}{row['k']:>3}{row['items']:>7}{shares}")
    print(f"items whose 100 labels tie for the majority (left out): {tied}; {figures['seconds']} s")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
