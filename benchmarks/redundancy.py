"""Benchmark: how many labels does an item need? Fixed redundancy against the stability rule, on ChaosNLI.

Each ChaosNLI item (SNLI and MNLI-matched) carries 100 labels. The simulation draws an item's labels one by
one from those 100 without replacement (seeded) and measures, for every collection rule, the labels spent
(mean per item) and the distribution error: the mean JS distance (metrics.distributions.js_distance, the
figure the app reports) between the collected distribution and the 100-label one.

Rules: fixed k = 3, 5, 10 labels per item, and the 'stability' strategy (metrics.stability.is_stable, the
function the app's redundancy applies) at several thresholds, between --minimum and --maximum labels.

The stability rule's threshold is picked on SNLI alone (the largest threshold whose mean error is at most
fixed-10's) and then applied unchanged to MNLI (`stability_labels_saved_*`).

The headline figures are exact, not simulated (`stopping_limit_and_rule`): the limit of any stopping rule
that does not know the items (`bound_labels_saved_*`) and the Bayes rule fitted on one half of the items and
reported on the other (`labels_saved_*`, `reaches_fixed10_error_*`). Majority-decided stopping is measured on
SNLI's original five labels an item (`majority_decided_*`).

Usage: python benchmarks/redundancy.py [--json] [--plot PATH] [--seed S] [--minimum M] [--maximum X]
With --json the last line of stdout is {"snli": {...}, "mnli": {...}, "bound_labels_saved_snli",
"labels_saved_snli", "reaches_fixed10_error_snli", the same for mnli, "majority_decided_labels_saved_snli",
"bayes_snli": {...}, ...}.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks._common import SHARED_DATA, argument_parser, log  # noqa: E402
from metrics import bayes_stopping  # noqa: E402
from metrics.distributions import js_distance  # noqa: E402
from metrics.stability import expected_error, majority_decided  # noqa: E402

DATASETS = {
    "snli": SHARED_DATA / "chaosnli" / "chaosNLI_snli.jsonl",
    "mnli": SHARED_DATA / "chaosnli" / "chaosNLI_mnli_m.jsonl",
}
FIXED = (3, 5, 10)
THRESHOLDS = (0.30, 0.25, 0.22, 0.20, 0.18, 0.16, 0.15, 0.14, 0.13)


def read_label_counts(path: Path) -> np.ndarray:
    """(n_items, 3) label counts of a ChaosNLI file, columns e, n, c."""
    with open(path, encoding="utf-8") as rows:
        return np.array([json.loads(line)["label_count"] for line in rows if line.strip()], dtype=np.int64)


def collected_counts(label_counts: np.ndarray, labels: int, seed: int) -> np.ndarray:
    """(n_items, labels + 1, n_classes): each item's counts after its first 0..labels draws, drawn without
    replacement from its own labels in a seeded random order."""
    rng = np.random.default_rng(seed)
    n_items, n_classes = label_counts.shape
    pools = [np.repeat(np.arange(n_classes), row) for row in label_counts]
    if min(len(pool) for pool in pools) < labels:
        raise ValueError(f"every item needs at least {labels} labels to draw from")
    drawn = np.array([rng.permutation(pool)[:labels] for pool in pools])  # (n_items, labels)
    one_hot = drawn[:, :, None] == np.arange(n_classes)
    counts = np.zeros((n_items, labels + 1, n_classes), dtype=np.int64)
    counts[:, 1:] = np.cumsum(one_hot, axis=1)
    return counts


def simulate(label_counts: np.ndarray, thresholds, minimum: int, maximum: int, seed: int, fixed=FIXED) -> dict:
    """Labels spent and mean error of each rule on one data set (see the module's docstring)."""
    truth = label_counts / label_counts.sum(axis=1, keepdims=True)
    horizon = max(maximum, *fixed)
    counts = collected_counts(label_counts, horizon, seed)
    n_items, _, n_classes = counts.shape

    def error_at(stop: np.ndarray) -> np.ndarray:
        collected = counts[np.arange(n_items), stop]
        return js_distance(collected / collected.sum(axis=1, keepdims=True), truth)

    rules = {}
    for k in fixed:
        rules[f"fixed-{k}"] = {"labels": float(k), "error": float(error_at(np.full(n_items, k)).mean())}
    steps = np.arange(minimum, maximum)
    errors = expected_error(counts[:, minimum:maximum].reshape(-1, n_classes)).reshape(n_items, len(steps))
    for threshold in thresholds:
        settled = errors <= threshold
        # the first settled step, or the maximum when none is
        stop = np.where(settled.any(axis=1), steps[np.argmax(settled, axis=1)], maximum)
        rules[f"stability-{threshold:g}"] = {
            "threshold": threshold,
            "labels": float(stop.mean()),
            "error": float(error_at(stop).mean()),
        }
    return rules


def oracle_labels(label_counts: np.ndarray, reference: int, maximum: int, seed: int, samples: int = 300) -> float:
    """What knowing every item's true distribution is worth: the mean labels per item when labels go, one at
    a time, where they cut the expected error most, until the mean expected error is at most that of
    `reference` labels for every item. Expected errors are of labels drawn with replacement, averaged over
    `samples` draws. Not a bound on stopping rules: a rule also sees the labels drawn, which this allocation
    does not, and on MNLI-m the Bayes-optimal rule (`stopping_limit_and_rule`) saves far more."""
    rng = np.random.default_rng(seed)
    truth = label_counts / label_counts.sum(axis=1, keepdims=True)
    n_items, n_classes = truth.shape
    curve = np.zeros((n_items, maximum + 1))  # expected error of each item after n labels
    curve[:, 0] = np.inf
    for labels in range(1, maximum + 1):
        drawn = rng.multinomial(labels, truth, size=(samples, n_items)) / labels
        truth_rows = np.broadcast_to(truth, drawn.shape)
        distances = js_distance(drawn.reshape(-1, n_classes), truth_rows.reshape(-1, n_classes))
        curve[:, labels] = distances.reshape(samples, n_items).mean(axis=0)
    target_error = curve[:, reference].mean()
    allotted = np.ones(n_items, dtype=np.int64)
    rows = np.arange(n_items)
    while curve[rows, allotted].mean() > target_error and (allotted < maximum).any():
        after = curve[rows, np.minimum(allotted + 1, maximum)]
        gain = np.where(allotted < maximum, curve[rows, allotted] - after, -np.inf)
        allotted[np.argmax(gain)] += 1
    return float(allotted.mean())


def stopping_limit_and_rule(label_counts: np.ndarray, seed: int, maximum: int, reference: int = 10) -> dict:
    """The limit of stopping rules and the Bayes rule the app can run, on one data set (metrics.bayes_stopping).

    Items are split in two halves by a seeded permutation (np.random.default_rng(seed).permutation: the
    first half, floor(n/2) items, calibrates, the rest is reported on). Every figure is an exact expectation
    over label orders (draws without replacement from each item's 100 labels), not a simulation.
    - The limit (bound): the Bayes-optimal rule whose population is the reported half's own items, the best
      any rule that does not know an item can do there; its price per label is set so that the mean error
      equals the reference's, mixing the two rules around it (a randomised rule) where no single one does.
    - The limit without the item itself (`bound_self_excluded`): the same, but each reported item meets the
      rule built from the other reported items (bayes_stopping.leave_one_out_tables): what a rule that knows
      every other item's 100 labels, but not this item's, can do. The bound above counts each item's own
      pool among the candidates its posterior weighs, which no rule that does not know the item has.
    - The rule: the Bayes rule whose population is the calibration half (its items' exact label pools), its
      price set on that half so that the mean error there is at most the reference's, each calibration item
      judged under the rule built from the other calibration items (judged in-sample, the rule's error on the
      reported half came out 0.8% / 0.2% above the target); then applied unchanged to the reported half.
    """
    order = np.random.default_rng(seed).permutation(len(label_counts))
    calibration, reported = label_counts[order[: len(order) // 2]], label_counts[order[len(order) // 2 :]]
    reported_items = bayes_stopping.Population.of_counts(reported, without_replacement=True)
    world = bayes_stopping.tables(reported_items, maximum)
    target = bayes_stopping.fixed_outcome(world, reference)
    _, reaching, missing = bayes_stopping.price_for(world, world, target, minimum=1)
    bound_labels = bayes_stopping.labels_at(target, reaching, missing)
    without_each = bayes_stopping.leave_one_out_tables(reported_items, maximum)
    _, reaching, missing = bayes_stopping.leave_one_out_price(without_each, target, minimum=1)
    self_excluded_labels = bayes_stopping.labels_at(target, reaching, missing)
    del without_each
    calibration_items = bayes_stopping.Population.of_counts(calibration, without_replacement=True)
    calibration_world = bayes_stopping.tables(calibration_items, maximum)
    calibration_target = bayes_stopping.fixed_outcome(calibration_world, reference)
    price, _, _ = bayes_stopping.leave_one_out_price(
        bayes_stopping.leave_one_out_tables(calibration_items, maximum), calibration_target, minimum=1
    )
    labels, error = bayes_stopping.outcome(bayes_stopping.policy(calibration_world, price, 1), world)
    return {
        "split": f"seeded permutation (seed {seed}): first {len(calibration)} items calibrate, {len(reported)} reported",
        f"fixed{reference}_error": round(target, 5),
        "bound_labels": round(bound_labels, 3),
        "bound_labels_saved": round(1 - bound_labels / reference, 4),
        "bound_self_excluded_labels": round(self_excluded_labels, 3),
        "bound_self_excluded_labels_saved": round(1 - self_excluded_labels / reference, 4),
        "rule_price_per_label": price,
        "rule_labels": round(labels, 3),
        "rule_error": round(error, 5),
        "rule_labels_saved": round(1 - labels / reference, 4),
        "rule_reaches_reference_error": error <= target,
    }


SNLI_ORIGINAL = SHARED_DATA / "snli" / "partial_original_format" / "snli_1.0_dev.partial.jsonl"
SNLI_LABELS = ("entailment", "neutral", "contradiction")


def majority_decided_on_snli(path: Path = SNLI_ORIGINAL, budget: int = 5, seed: int = 0) -> dict:
    """Majority-decided stopping (metrics.stability.majority_decided) against fixed-5 on SNLI's original
    five labels an item (items with fewer are left out): labels are taken in the file's order (the pair's
    writer first), and, as a check that the order does not matter, in a seeded random order. Agreement is
    with the five-label majority (a tie counts as its own outcome); stopping once the majority is decided
    cannot change it, so the agreement is 1 by construction and the test suite checks it on the data."""
    with open(path, encoding="utf-8") as rows:
        votes = [json.loads(line)["annotator_labels"] for line in rows if line.strip()]
    votes = [[SNLI_LABELS.index(label) for label in item] for item in votes if len(item) == budget]
    orders = {"file_order": np.array(votes)}
    orders["shuffled"] = np.random.default_rng(seed).permuted(orders["file_order"], axis=1)
    result: dict = {"items": len(votes), "budget": budget}
    for name, labels in orders.items():
        one_hot = labels[:, :, None] == np.arange(len(SNLI_LABELS))
        counts = np.cumsum(one_hot, axis=1)  # (items, budget, classes): counts after 1..budget labels
        decided = majority_decided(counts.reshape(-1, len(SNLI_LABELS)), budget).reshape(len(labels), budget)
        stop = np.argmax(decided, axis=1)  # index of the first decided step (the last step always is)
        at_stop = counts[np.arange(len(labels)), stop]
        final = counts[:, -1]
        agree = np.array([_majority(a) == _majority(b) for a, b in zip(at_stop, final, strict=True)])
        result[name] = {
            "labels_per_item": round(float((stop + 1).mean()), 4),
            "labels_saved": round(float(1 - (stop + 1).mean() / budget), 4),
            "agreement_with_five_label_majority": float(agree.mean()),
        }
    return result


def _majority(counts: np.ndarray) -> int:
    """The leading class, -1 for a tie at the top."""
    top = counts.max()
    return int(np.argmax(counts)) if (counts == top).sum() == 1 else -1


def matching_threshold(rules: dict, reference: str = "fixed-10") -> float | None:
    """The threshold at which the stability rule's mean error equals the reference rule's, interpolated
    linearly between the two simulated thresholds around it (None if no two bracket it)."""
    target = rules[reference]["error"]
    points = sorted((rule["threshold"], rule["error"]) for rule in rules.values() if "threshold" in rule)
    for (low, low_error), (high, high_error) in itertools.pairwise(points):
        if low_error <= target <= high_error:
            return round(low + (high - low) * (target - low_error) / (high_error - low_error), 4)
    return None


def write_plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for (name, rules), colour in zip(results.items(), ("tab:blue", "tab:orange"), strict=False):
        fixed = [rule for key, rule in rules.items() if key.startswith("fixed")]
        adaptive = [rule for key, rule in rules.items() if key.startswith("stability")]
        axes.plot(
            [r["labels"] for r in fixed], [r["error"] for r in fixed], "o--", color=colour, label=f"{name} fixed k"
        )
        axes.plot(
            [r["labels"] for r in adaptive],
            [r["error"] for r in adaptive],
            "s-",
            color=colour,
            label=f"{name} stability",
        )
    axes.set_xlabel("labels spent per item (mean)")
    axes.set_ylabel("mean JS distance to the 100-label distribution")
    axes.set_title("ChaosNLI: fixed redundancy vs the stability rule")
    axes.grid(alpha=0.3)
    axes.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--plot", type=Path, default=REPO_ROOT / "var" / "benchmarks" / "redundancy.png")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minimum", type=int, default=2)
    parser.add_argument("--maximum", type=int, default=30)
    args = parser.parse_args()
    label_counts = {name: read_label_counts(path) for name, path in DATASETS.items()}
    results = {}
    for name, counts in label_counts.items():
        log(f"simulating {name}")
        results[name] = simulate(counts, THRESHOLDS, args.minimum, args.maximum, args.seed)
    # Chosen on SNLI alone, then applied to both: MNLI is the held-out check.
    threshold = matching_threshold(results["snli"])
    at_threshold, oracle = {}, {}
    for name, counts in label_counts.items():
        log(f"oracle bound on {name}")
        oracle[name] = oracle_labels(counts, 10, args.maximum, args.seed)
        if threshold is not None:
            at_threshold[name] = simulate(counts, (threshold,), args.minimum, args.maximum, args.seed, fixed=(10,))
    for name, rules in results.items():
        print(f"\n{name}: rule, labels per item, mean JS distance")
        for key, rule in rules.items():
            print(f"  {key:<16} {rule['labels']:6.2f}  {rule['error']:.4f}")
    figures: dict = {
        **results,
        "threshold_chosen_on_snli": threshold,
        "at_threshold": at_threshold,
        "minimum": args.minimum,
        "maximum": args.maximum,
    }
    for name, labels in oracle.items():
        figures[f"oracle_labels_saved_{name}"] = round(1 - labels / 10, 4)
        print(
            f"\n{name}: an oracle knowing every distribution reaches fixed-10's error with {labels:.2f} labels per item"
        )
    for name, rules in at_threshold.items():
        chosen = rules[f"stability-{threshold:g}"]
        saved = 1 - chosen["labels"] / rules["fixed-10"]["labels"]
        figures[f"labels_saved_{name}"] = round(saved, 4)
        figures[f"reaches_fixed10_error_{name}"] = chosen["error"] <= rules["fixed-10"]["error"]
        print(
            f"\n{name}: stability-{threshold:g} spends {chosen['labels']:.2f} labels per item "
            f"({saved:.1%} fewer than fixed-10), error {chosen['error']:.4f} vs {rules['fixed-10']['error']:.4f}"
        )
    # The limit of any stopping rule, and the Bayes rule fitted on a calibration half (the headline figures).
    for name, counts in label_counts.items():
        log(f"Bayes stopping on {name}")
        limit = stopping_limit_and_rule(counts, args.seed, min(args.maximum, 30))
        figures[f"bayes_{name}"] = limit
        figures[f"stability_labels_saved_{name}"] = figures.pop(f"labels_saved_{name}", None)
        figures[f"stability_reaches_fixed10_error_{name}"] = figures.pop(f"reaches_fixed10_error_{name}", None)
        figures[f"bound_labels_saved_{name}"] = limit["bound_labels_saved"]
        figures[f"bound_self_excluded_labels_saved_{name}"] = limit["bound_self_excluded_labels_saved"]
        figures[f"labels_saved_{name}"] = limit["rule_labels_saved"]
        figures[f"reaches_fixed10_error_{name}"] = limit["rule_reaches_reference_error"]
        print(
            f"\n{name}: no rule that does not know the items saves more than {limit['bound_labels_saved']:.1%} of "
            f"fixed-10's labels at its error ({limit['fixed10_error']:.4f}), or "
            f"{limit['bound_self_excluded_labels_saved']:.1%} without each item's own labels among the candidates; "
            f"the Bayes rule fitted on the other half "
            f"saves {limit['rule_labels_saved']:.1%} with error {limit['rule_error']:.4f} ({limit['split']})"
        )
    log("majority-decided stopping on SNLI's original five labels")
    decided = majority_decided_on_snli(seed=args.seed)
    figures["majority_decided_snli"] = decided
    figures["majority_decided_labels_saved_snli"] = decided["file_order"]["labels_saved"]
    figures["majority_decided_agreement_snli"] = decided["file_order"]["agreement_with_five_label_majority"]
    print(
        f"\nSNLI dev, original 5 labels ({decided['items']} items): majority-decided stopping spends "
        f"{decided['file_order']['labels_per_item']:.2f} labels per item ({decided['file_order']['labels_saved']:.1%} "
        f"fewer than fixed-5), agreeing with the five-label majority on "
        f"{decided['file_order']['agreement_with_five_label_majority']:.1%} of items"
    )
    write_plot(results, args.plot)
    log(f"plot written to {args.plot}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
