"""Benchmark: the alternative annotator test on a large study.

Simulates a study of N items x A annotators (each gives the item's true label 70% of the time, else a
random one) and a model right 75% of the time with soft probabilities, writes them as the `alt-test` suite
reads them (per-annotator JSONL, prediction JSONL), then times the suite end to end (reading and checking
both files, then scoring) and the metric alone, for both alignments. The issue's target: every figure of a
100,000-item, 5-annotator study in under 10 s.

Usage: python benchmarks/alt_test.py [--json] [--items N] [--annotators A] [--seed S]
With --json the last line of stdout is {"items", "annotators", "annotations", "suite_seconds", ...}.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from evaluation.suites import load_alt_test, score_alt_test  # noqa: E402
from metrics.alt_test import alt_test  # noqa: E402

LABELS = ("e", "n", "c")


def write_study(folder: Path, n_items: int, n_annotators: int, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    given = np.where(
        rng.random((n_items, n_annotators)) < 0.7, truth[:, None], rng.integers(0, 3, (n_items, n_annotators))
    )
    guesses = np.where(rng.random(n_items) < 0.75, truth, rng.integers(0, 3, n_items))
    soft = 0.7 * np.eye(3)[guesses] + 0.3 * rng.dirichlet(np.ones(3), n_items)
    annotations, predictions = folder / "annotations.jsonl", folder / "predictions.jsonl"
    with open(annotations, "w", encoding="utf-8") as handle:
        for item in range(n_items):
            for annotator in range(n_annotators):
                label = LABELS[given[item, annotator]]
                handle.write(json.dumps({"id": f"i{item}", "annotator": f"w{annotator}", "label": label}) + "\n")
    with open(predictions, "w", encoding="utf-8") as handle:
        for item in range(n_items):
            probabilities = dict(zip(LABELS, (float(p) for p in soft[item])))
            handle.write(json.dumps({"id": f"i{item}", "probabilities": probabilities}) + "\n")
    return annotations, predictions


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        annotations, predictions = write_study(Path(folder), args.items, args.annotators, args.seed)
        start = time.perf_counter()
        inputs = load_alt_test(annotations, predictions)
        read_seconds = time.perf_counter() - start
    figures = {"items": args.items, "annotators": args.annotators, "annotations": len(inputs.items)}
    figures["read_seconds"] = round(read_seconds, 3)
    for alignment in ("label", "distribution"):
        start = time.perf_counter()
        result = score_alt_test(inputs, alignment=alignment)
        figures[f"score_{alignment}_seconds"] = round(time.perf_counter() - start, 3)
        figures[f"winning_rate_{alignment}"] = result["winning_rate"]
        figures[f"advantage_probability_{alignment}"] = round(result["advantage_probability"], 4)
    start = time.perf_counter()
    alt_test(inputs.items, inputs.annotators, inputs.labels, inputs.model)
    figures["metric_seconds"] = round(time.perf_counter() - start, 3)
    figures["suite_seconds"] = round(read_seconds + figures["score_label_seconds"], 3)

    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"{name:<{width}}  {value}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
