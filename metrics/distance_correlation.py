"""Distance correlation of paired samples: a dependence measure that is 0 only for independent samples (in the
limit), used by the soft-label measures (human vs model distributions) and their bootstrap intervals."""

import numpy as np

# Above this many items the (n, n) distance matrices of `distance_correlation` would not fit in memory.
DISTANCE_CORRELATION_MAX_ITEMS = 20_000


def _centred_distances(points: np.ndarray) -> np.ndarray:
    distances = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
    return distances - distances.mean(axis=0) - distances.mean(axis=1)[:, None] + distances.mean()


def distance_correlation(x, y) -> float:
    """Distance correlation (Székely, Rizzo and Bakirov 2007, the V-statistic) of paired samples.

    x: (n,) or (n, p); y: (n,) or (n, q), n >= 2, finite. Returns a value in [0, 1]: 0 when the samples are
    independent (in the limit), 1 when one is a similarity transform of the other. 0 when either sample is
    constant (the definition's value: a constant has distance variance 0 and is independent of anything). Memory grows with n^2: more than DISTANCE_CORRELATION_MAX_ITEMS items is a ValueError.
    """
    x, y = (np.asarray(values, dtype=float) for values in (x, y))
    x, y = (values[:, None] if values.ndim == 1 else values for values in (x, y))
    if x.ndim != 2 or y.ndim != 2 or len(x) != len(y) or len(x) < 2:
        raise ValueError(f"distance_correlation needs two samples of the same length >= 2, got {x.shape} and {y.shape}")
    if len(x) > DISTANCE_CORRELATION_MAX_ITEMS:
        raise ValueError(f"distance_correlation takes at most {DISTANCE_CORRELATION_MAX_ITEMS} items, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("distance_correlation needs finite values (no NaN or infinity)")
    a, b = _centred_distances(x), _centred_distances(y)
    covariance, variance_x, variance_y = (a * b).mean(), (a * a).mean(), (b * b).mean()
    if variance_x <= 0 or variance_y <= 0:
        return 0.0
    return float(np.sqrt(max(covariance, 0.0) / np.sqrt(variance_x * variance_y)))
