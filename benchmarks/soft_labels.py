"""Benchmark: every figure of the chaos suite, with bootstrap intervals, on a large synthetic study.

Builds a study of N items x A annotators over 3 labels (each item's label distribution drawn from a
Dirichlet, each annotator's label drawn from it; the model's distribution a noisy copy), then times
`evaluation.suites.score_chaos` on it: the ChaosNLI figures, the entropy bins, the split-half baseline, the
soft-label measures (distance correlation on its 2,000-item sample), the most and least human-like items
and a percentile bootstrap interval for each, plus LeWiDi's per-annotator error rate with its interval.
The goal (issue 29) is under 10 seconds for 100,000 items x 5 annotators with 1,000 resamples.

Usage: python benchmarks/soft_labels.py [--json] [--items N] [--annotators A] [--bootstrap B] [--seed S]
With --json the last line of stdout is {"items", "annotators", "bootstrap", "seconds", "figures", ...}.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

LABELS = np.array(["e", "n", "c"], dtype=object)


def synthetic_study(n_items: int, n_annotators: int, seed: int):
    """(ChaosInputs, annotator labels (items, annotators), model's guess of each annotator's label)."""
    from evaluation.suites import ChaosInputs

    rng = np.random.default_rng(seed)
    truth = rng.dirichlet([0.8, 0.8, 0.8], n_items)
    cumulative = truth.cumsum(axis=1)
    labels = (rng.random((n_items, n_annotators, 1)) > cumulative[:, None, :-1]).sum(axis=2)
    counts = np.stack([(labels == k).sum(axis=1) for k in range(3)], axis=1)
    human = counts / n_annotators
    model = 0.6 * truth + 0.4 * rng.dirichlet([1.0, 1.0, 1.0], n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(human > 0, human * np.log2(np.where(human > 0, human, 1)), 0).sum(axis=1)
    inputs = ChaosInputs(
        uid=np.array([f"item-{i}" for i in range(n_items)], dtype=object),
        label_count=counts,
        human=human,
        entropy=entropy,
        majority_label=LABELS[counts.argmax(axis=1)],
        old_label=LABELS[labels[:, 0]],
        model=model,
        predicted_label=LABELS[model.argmax(axis=1)],
        renormalised_rows=0,
    )
    guesses = np.repeat(model.argmax(axis=1)[:, None], n_annotators, axis=1)
    return inputs, labels.astype(float), guesses.astype(float)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import django

    django.setup()
    from evaluation.suites import score_chaos
    from metrics.bootstrap import bootstrap_figures
    from metrics.soft_labels import annotator_error_rate

    inputs, labels, guesses = synthetic_study(args.items, args.annotators, args.seed)
    start = time.perf_counter()
    result = score_chaos(inputs, seed=args.seed, bootstrap=args.bootstrap)
    error_rate = bootstrap_figures(
        args.items, means={"annotator_error_rate": annotator_error_rate(labels, guesses)}, n_boot=args.bootstrap
    )["annotator_error_rate"]
    seconds = time.perf_counter() - start

    summary = {
        "items": args.items,
        "annotators": args.annotators,
        "bootstrap": args.bootstrap,
        "seconds": round(seconds, 2),
        "goal_seconds": 10,
        "figures_with_intervals": len(result["intervals"]) + 1,
        "jsd": [result["jsd"], *result["intervals"]["jsd"]],
        "tvd": [result["soft_labels"]["tvd"], *result["intervals"]["soft_labels.tvd"]],
        "annotator_error_rate": list(error_rate),
        "distance_correlation_items": result["soft_labels"]["distance_correlation_items"],
    }
    if args.json:
        print(json.dumps(summary))
    else:
        for name, value in summary.items():
            print(f"{name:<28} {value}")


if __name__ == "__main__":
    main()
