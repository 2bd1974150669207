"""The alternative annotator test (alt-test) of Calderon, Reichart & Dror (ACL 2025): may a model take the
place of a study's human annotators?

Each annotator is held out in turn. On every item the held-out annotator labelled together with at least one
other annotator, the model and the held-out annotator are each scored by how well they agree with the others
(the alignment score); an indicator says who did at least as well (a tie counts for both). Per annotator, a
one-sided one-sample t-test of the differences d = W_human - W_model against epsilon tests
H0: p_model <= p_human - epsilon, where epsilon is the allowance the model earns by being cheaper. The
Benjamini-Yekutieli procedure controls the false discovery rate over the annotators tested. The winning rate
is the share of annotators whose H0 is rejected; the model passes when it is at least 0.5. The advantage
probability, the mean of the model's win shares, compares models with one another.

This follows the authors' reference implementation (github.com/nitaytech/AltTest, `alt_test` in
alt_test_example.ipynb): the same indicators, ties, test, correction and defaults (30 items per annotator,
q = 0.05); docs/metrics.md, "Alternative annotator test", says how the tests check it.

Alignment score: 1 - total variation distance between a row of label probabilities and the other
annotators' label distribution on the item. For a label (a one-hot row) it is the share of the others who
gave that label, the paper's accuracy score; for a model's probabilities it rewards matching the spread of
the others' labels.
"""

import numpy as np

from metrics.checks import check_distributions, check_same_length
from metrics.soft_labels import total_variation_distance

# Scores are shares of the other annotators computed two ways (a count ratio and 1 - TVD): equal shares can
# differ in the last bits, and a tie must count as one.
TIE_TOLERANCE = 1e-9
# The paper's minimum number of items per annotator, below which the t-test's normal approximation fails.
MIN_ITEMS = 30
# The authors' rule of thumb: 0.1 for crowd workers, 0.15 for skilled annotators, 0.2 for experts.
CROWD_EPSILON = 0.1


def benjamini_yekutieli(p_values, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(adjusted p-values, rejected) of the Benjamini-Yekutieli step-up procedure at false discovery rate
    `alpha`, valid under any dependence between the tests.

    p_values: shape (m,). The adjusted value of the i-th smallest p is min over j >= i of
    p_(j) * m * c(m) / j, capped at 1, with c(m) = 1 + 1/2 + ... + 1/m; a test is rejected when its adjusted
    value is at most alpha (the same as rejecting the k smallest, k the largest i with
    p_(i) <= i * alpha / (m * c(m))).
    """
    p_values = np.asarray(p_values, dtype=float)
    if p_values.ndim != 1 or not ((p_values >= 0) & (p_values <= 1)).all():
        raise ValueError("p_values must have shape (m,) and lie in [0, 1]")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    m = len(p_values)
    if m == 0:
        return p_values.copy(), np.zeros(0, dtype=bool)
    order = np.argsort(p_values, kind="stable")
    ranks = np.arange(1, m + 1)
    scaled = p_values[order] * m * np.sum(1.0 / ranks) / ranks
    adjusted_sorted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return adjusted, adjusted <= alpha


def one_sided_t_p_values(differences, groups, n_groups: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(n, p-value) per group of a one-sample t-test of H0: mean(differences) >= epsilon against
    mean < epsilon, as scipy.stats.ttest_1samp(d, epsilon, alternative="less") per group.

    differences: (m,) numbers; groups: (m,) group index in [0, n_groups). A group whose differences are all
    equal has no variance: its p-value is 0 if their mean lies below epsilon, else 1. Groups of fewer than 2
    values get NaN.
    """
    from scipy import stats

    differences = np.asarray(differences, dtype=float)
    n = np.bincount(groups, minlength=n_groups).astype(float)
    total = np.bincount(groups, weights=differences, minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / n
        squares = np.bincount(groups, weights=(differences - mean[groups]) ** 2, minlength=n_groups)
        standard_error = np.sqrt(squares / (n - 1) / n)
        p_values = stats.t.cdf((mean - epsilon) / standard_error, df=n - 1)
    constant = (squares <= 0) & (n >= 2)
    p_values[constant] = np.where(mean[constant] < epsilon, 0.0, 1.0)
    p_values[n < 2] = np.nan
    return n.astype(int), p_values


def items_with_others(items, annotators) -> tuple[np.ndarray, np.ndarray]:
    """(usable, items per annotator): which annotations have at least one other annotator on their item,
    and how many such items each annotator has (shape (max annotator index + 1,)).

    items, annotators: (m,) whole-number indexes, one (item, annotator) pair per annotation.
    """
    items, annotators = np.asarray(items), np.asarray(annotators)
    usable = np.bincount(items)[items] >= 2
    return usable, np.bincount(annotators[usable], minlength=int(annotators.max(initial=-1)) + 1)


def alt_test(
    items,
    annotators,
    labels,
    model,
    epsilon: float = CROWD_EPSILON,
    alpha: float = 0.05,
    min_items: int = MIN_ITEMS,
) -> dict:
    """The alt-test of a model against the annotators of a study.

    items: (m,) item index of each annotation, in [0, n_items); annotators: (m,) annotator index; labels:
    (m,) class index in [0, n_classes); one annotation per (item, annotator). model: (n_items, n_classes)
    the model's row per item, a probability distribution (one-hot for a label).
    epsilon in [0, 1): the allowance of the test; alpha: the false discovery rate; min_items: an annotator
    is tested only with at least this many items shared with another annotator.

    Returns: `annotators`, one row per tested annotator (index, items, model_wins and human_wins (the
    shares of items where each did at least as well), p_value, p_adjusted (Benjamini-Yekutieli), rejected);
    `too_few_items`, the {index, items} of annotators left out; winning_rate, passed (winning_rate >= 0.5),
    advantage_probability, items_compared (items with 2 or more annotators) and annotations_tested. Raises ValueError on malformed input
    and when no annotator can be tested.
    """
    model = check_distributions(model, "model")
    check_same_length(items=items, annotators=annotators, labels=labels)
    items, annotators, labels = (np.asarray(values) for values in (items, annotators, labels))
    n_items, n_classes = model.shape
    for name, values, bound in (
        ("items", items, n_items),
        ("labels", labels, n_classes),
        ("annotators", annotators, None),
    ):
        if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer) or (values < 0).any():
            raise ValueError(f"{name} must be a (m,) array of non-negative whole numbers")
        if bound is not None and (values >= bound).any():
            raise ValueError(f"{name} must lie below {bound} (the model's {'items' if name == 'items' else 'classes'})")
    n_annotators = int(annotators.max(initial=-1)) + 1
    if len(np.unique(items * n_annotators + annotators)) != len(items):
        raise ValueError("an annotator labels an item twice")
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must lie in [0, 1), got {epsilon!r}")
    if min_items < 2:
        raise ValueError(f"min_items must be at least 2 (a t-test needs 2 values), got {min_items!r}")

    usable, shared_items = items_with_others(items, annotators)
    if not usable.any():
        raise ValueError("no item has 2 or more annotators: the test compares an annotator with the others")
    tested = np.flatnonzero(shared_items >= min_items)
    if not len(tested):
        raise ValueError(
            f"no annotator has {min_items} items shared with another annotator (most: {shared_items.max()})"
        )

    items, annotators, labels = items[usable], annotators[usable], labels[usable]
    counts = np.bincount(items * n_classes + labels, minlength=n_items * n_classes).reshape(n_items, n_classes)
    others = counts[items].astype(float)
    others[np.arange(len(labels)), labels] -= 1
    others /= others.sum(axis=1, keepdims=True)
    human_score = others[np.arange(len(labels)), labels]
    model_score = 1 - total_variation_distance(others, model[items])
    model_wins = model_score >= human_score - TIE_TOLERANCE
    human_wins = human_score >= model_score - TIE_TOLERANCE

    keep = np.isin(annotators, tested)
    group = np.searchsorted(tested, annotators[keep])
    n, p_values = one_sided_t_p_values(human_wins[keep].astype(float) - model_wins[keep], group, len(tested), epsilon)
    adjusted, rejected = benjamini_yekutieli(p_values, alpha)
    model_share = np.bincount(group, weights=model_wins[keep], minlength=len(tested)) / n
    human_share = np.bincount(group, weights=human_wins[keep], minlength=len(tested)) / n
    left_out = np.flatnonzero(shared_items < min_items)
    return {
        "annotators": [
            {
                "index": int(index),
                "items": int(n[row]),
                "model_wins": float(model_share[row]),
                "human_wins": float(human_share[row]),
                "p_value": float(p_values[row]),
                "p_adjusted": float(adjusted[row]),
                "rejected": bool(rejected[row]),
            }
            for row, index in enumerate(tested)
        ],
        "too_few_items": [{"index": int(index), "items": int(shared_items[index])} for index in left_out],
        "winning_rate": float(rejected.mean()),
        "passed": bool(rejected.mean() >= 0.5),
        "advantage_probability": float(model_share.mean()),
        "items_compared": len(np.unique(items)),
        "annotations_tested": int(keep.sum()),
        "epsilon": epsilon,
        "alpha": alpha,
        "min_items": min_items,
    }
