"""Benchmark: exact interval Krippendorff's alpha on continuous slider-like values.

Times `krippendorff_alpha(level="interval")` on 100,000 units x 3 annotators of random probabilities
(every value distinct) and measures its memory, then checks it against the `krippendorff` package on
data the package can handle: 300 units x 3 noisy annotators of probabilities rounded to 2 decimals
(with and without missing values, several seeds, all four levels) and the ChaosNLI SNLI label counts.

Usage: python benchmarks/agreement.py [--json] [--units N] [--annotators A] [--seed S] [--repeats R]
With --json the last line of stdout is {"units", "seconds", "peak_mb", "max_abs_diff_vs_package", ...}.
"""

import argparse
import json
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import krippendorff
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from metrics.agreement import krippendorff_alpha  # noqa: E402

CHAOSNLI_SNLI = REPO_ROOT / ".." / "shared" / "data" / "chaosnli" / "chaosNLI_snli.jsonl"
LEVELS = ("nominal", "ordinal", "interval", "ratio")


def time_alpha(data, level, repeats):
    """Median wall time over `repeats` calls, and the value."""
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = krippendorff_alpha(data, level=level)
        timings.append(time.perf_counter() - start)
    return statistics.median(timings), value


def traced_peak_mb(data, level):
    """Peak of memory allocated (numpy buffers included) while one alpha call runs, above what was live before."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    baseline, _ = tracemalloc.get_traced_memory()
    krippendorff_alpha(data, level=level)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (peak - baseline) / 1e6


def maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def comparisons_with_package(seeds):
    """Yield (case, level, ours, package, package_seconds) on data the package can handle."""
    for seed in seeds:
        rng = np.random.default_rng(seed)
        # Annotators who roughly agree (alpha far from 0), on a 0.01 grid so the package's arrays stay small.
        truth = rng.random(300)
        complete = np.round(np.clip(truth + rng.normal(0, 0.15, size=(3, 300)), 0, 1), 2)
        with_missing = complete.copy()
        with_missing[rng.random(complete.shape) < 0.2] = np.nan
        for case, data in ((f"300x3 seed {seed}", complete), (f"300x3 20% missing seed {seed}", with_missing)):
            for level in LEVELS:
                start = time.perf_counter()
                expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
                yield case, level, krippendorff_alpha(data, level=level), expected, time.perf_counter() - start

    if CHAOSNLI_SNLI.exists():
        with CHAOSNLI_SNLI.open() as lines:
            counts = np.array([json.loads(line)["label_count"] for line in lines])
        for level in ("nominal", "ordinal"):
            start = time.perf_counter()
            expected = krippendorff.alpha(value_counts=counts, level_of_measurement=level)
            seconds = time.perf_counter() - start
            ours = krippendorff_alpha(value_counts=counts, level=level)
            yield "ChaosNLI SNLI label_count", level, ours, expected, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="timed calls; the median is reported")
    args = parser.parse_args()

    data = np.random.default_rng(args.seed).random((args.annotators, args.units))
    distinct = len(np.unique(data))
    print(f"data: {args.annotators} annotators x {args.units} units of random probabilities, {distinct} distinct")
    package_gb = args.units * distinct * distinct * 8 / 1e9
    print(f"the krippendorff package would build a (units x values x values) float64 array: {package_gb:.3g} GB")

    seconds, value = time_alpha(data, "interval", args.repeats)
    peak_mb = traced_peak_mb(data, "interval")
    rss_after_big_run = maxrss_mb()
    print(f"interval alpha = {value:.6f}: median {seconds:.4f} s over {args.repeats} calls")
    print(f"peak memory of one call (tracemalloc, above the {data.nbytes / 1e6:.1f} MB input): {peak_mb:.1f} MB")
    print(f"process max RSS so far (getrusage; Python, numpy, scipy, input and the call): {rss_after_big_run:.1f} MB")
    for level in ("ordinal", "nominal"):
        level_seconds, level_value = time_alpha(data, level, args.repeats)
        print(f"{level} alpha on the same data = {level_value:.6f}: median {level_seconds:.4f} s")

    print()
    print(f"{'case':34} {'level':9} {'ours':>12} {'package':>12} {'|diff|':>9} {'package s':>9}")
    max_diff = 0.0
    for case, level, ours, expected, package_seconds in comparisons_with_package(seeds=range(5)):
        diff = abs(ours - expected)
        max_diff = max(max_diff, diff)
        print(f"{case:34} {level:9} {ours:12.9f} {expected:12.9f} {diff:9.1e} {package_seconds:9.3f}")
    print(f"max |ours - package| = {max_diff:.2e}")

    if args.json:
        print(
            json.dumps(
                {
                    "units": args.units,
                    "seconds": round(seconds, 4),
                    "peak_mb": round(peak_mb, 2),
                    "max_abs_diff_vs_package": max_diff,
                    "annotators": args.annotators,
                    "peak_mb_measure": "tracemalloc peak of one interval alpha call, above memory live before it",
                    "maxrss_mb_after_call": round(rss_after_big_run, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
