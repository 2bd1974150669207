"""Input checks shared by the metrics, as scikit-learn's `_check_targets` is shared by its metrics.

Every metric calls a `check_*` function on its arguments before computing anything, so a NaN, a negative
probability or a row that is not a distribution is a ValueError instead of a quietly wrong number. The file
readers call the `*_problem` functions, which say which row is wrong and why, to report the file, line and
field of the first bad value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Largest |sum - 1| of a probability row: float32 softmax outputs written as text stay within 1e-7.
PROBABILITY_TOLERANCE = 1e-6


def probability_problem(values: Any) -> tuple[int, str] | None:
    """(row, reason) for the first value that is NaN or outside [0, 1], else None.

    values: shape (n,) or (n, k); the row is the index along the first axis.
    """
    values = np.asarray(values, dtype=float)
    rows = values.reshape(len(values), -1) if values.ndim else values.reshape(1, 1)
    bad = ~((rows >= 0) & (rows <= 1))  # NaN fails both comparisons
    if not bad.any():
        return None
    row, column = np.argwhere(bad)[0]
    return int(row), f"{float(rows[row, column])!r} is not a probability in [0, 1]"


def distribution_problem(rows: Any, tolerance: float = PROBABILITY_TOLERANCE) -> tuple[int, str] | None:
    """(row, reason) for the first row of an (n, k) array that is not a probability distribution (values
    in [0, 1] summing to 1 within `tolerance`), else None."""
    rows = np.asarray(rows, dtype=float)
    problem = probability_problem(rows)
    if problem is not None:
        return problem
    sums = rows.sum(axis=1)
    off = np.abs(sums - 1) > tolerance
    if not off.any():
        return None
    row = int(np.argmax(off))
    return row, f"sums to {float(sums[row]):.6g}, not 1"


def check_probabilities(values: Any, name: str) -> np.ndarray:
    """`values` as a float array of shape (n,), every value in [0, 1]; ValueError otherwise."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"{name} must have shape (n,), got shape {values.shape}")
    _raise(probability_problem(values), name)
    return values


def check_distributions(rows: Any, name: str) -> np.ndarray:
    """`rows` as a float array of shape (n, k), k >= 2, each row a probability distribution."""
    rows = np.asarray(rows, dtype=float)
    if rows.ndim != 2 or rows.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, classes) with 2 or more classes, got shape {rows.shape}")
    _raise(distribution_problem(rows), name)
    return rows


def check_same_length(**arrays: Any) -> int:
    """The common length of (n,...) arrays given by name; ValueError naming them when they differ."""
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("inputs differ in length: " + ", ".join(f"{name} {n}" for name, n in lengths.items()))
    return next(iter(lengths.values()), 0)


def check_reliability_data(reliability_data: Any) -> np.ndarray:
    """Reliability data as a float array of shape (annotators, units), NaN for missing, no infinities."""
    try:
        matrix = np.asarray(reliability_data, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            "reliability_data must be numeric with NaN for missing values; encode category labels as codes"
        ) from None
    if matrix.ndim != 2:
        raise ValueError(f"reliability_data must have shape (annotators, units), got shape {matrix.shape}")
    if np.isinf(matrix).any():
        raise ValueError("reliability_data contains infinite values")
    return matrix


def check_value_counts(value_counts: Any) -> np.ndarray:
    """Value counts as a float array of shape (units, categories) of non-negative whole numbers."""
    counts = np.asarray(value_counts, dtype=float)
    if counts.ndim != 2:
        raise ValueError(f"value_counts must have shape (units, categories), got shape {counts.shape}")
    if not np.isfinite(counts).all() or (counts < 0).any() or (counts != np.round(counts)).any():
        raise ValueError("value_counts must hold non-negative whole numbers")
    return counts


def _raise(problem: tuple[int, str] | None, name: str) -> None:
    if problem is not None:
        row, reason = problem
        raise ValueError(f"{name} row {row}: {reason}")
