"""Several models compared on one set of items: each metric's bootstrap interval per model, and each model's
paired difference to the best model with its interval and p-value, all from the same resampled items.

`compare_models` takes a scoring function rather than arrays, so any metric of any protocol can be compared
(the caller closes over its gold and the models' outputs): score(model, item indices with repeats) ->
{metric name: value on those items}. Every model is scored on the resamples of `metrics.bootstrap.resamples`,
so one seed gives the same resampled items here as to every other bootstrap of the project, and a model's
interval equals `bootstrap_ci`'s for the same statistic and seed (tests).

The tables (`to_csv`, `to_markdown`, `to_latex`) are what goes into a paper: one row per metric x model in
CSV; in Markdown and LaTeX the models as rows and the metrics as columns, "estimate [low, high]" cells with the
best model's in bold, then each model's difference to the best with its interval and p-value.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metrics.bootstrap import ConfidenceInterval, _percentile_interval, resamples

Score = Callable[[str, np.ndarray], Mapping[str, float]]

ROW_KEYS = (
    "metric",
    "model",
    "estimate",
    "low",
    "high",
    "best",
    "difference",
    "difference_low",
    "difference_high",
    "p_value",
)


@dataclass(frozen=True)
class ModelComparison:
    """The comparison of `compare_models`.

    rows: one dict per metric x model (metrics in the order the score gives them, models in the order
        given), with the keys of ROW_KEYS: `estimate` on all items and its percentile interval `low`..`high`;
        `best` (the best estimate of the metric, first in model order on a tie); `difference`, the model's
        estimate minus the best's, with the percentile interval of the paired resampled differences and
        the two-sided `p_value` of "no difference" (0, 0, 0 and NaN for the best model itself). NaN marks
        an undefined figure (e.g. no resample defined it); `as_dict` writes it as None.
    """

    rows: list[dict[str, Any]]
    metrics: list[str]
    models: list[str]
    higher_is_better: dict[str, bool]
    n_items: int
    n_boot: int
    alpha: float
    seed: int
    _by_cell: dict[tuple[str, str], dict[str, Any]] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_cell", {(row["metric"], row["model"]): row for row in self.rows})

    def row(self, metric: str, model: str) -> dict[str, Any]:
        """The row of one metric and model."""
        return self._by_cell[(metric, model)]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the rows with NaN as None, and the settings that produced them."""
        return {
            "rows": [{key: _json_value(value) for key, value in row.items()} for row in self.rows],
            "metrics": list(self.metrics),
            "models": list(self.models),
            "higher_is_better": dict(self.higher_is_better),
            "n_items": self.n_items,
            "bootstrap": {"resamples": self.n_boot, "level": 1 - self.alpha, "seed": self.seed, "unit": "item"},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelComparison:
        """The comparison back from `as_dict` (e.g. a stored result), None as NaN, to draw its tables."""
        bootstrap = data["bootstrap"]
        return cls(
            rows=[{key: math.nan if value is None else value for key, value in row.items()} for row in data["rows"]],
            metrics=list(data["metrics"]),
            models=list(data["models"]),
            higher_is_better=dict(data["higher_is_better"]),
            n_items=data["n_items"],
            n_boot=bootstrap["resamples"],
            alpha=round(1 - bootstrap["level"], 12),  # 1 - 0.95 is 0.05000000000000004 in floats
            seed=bootstrap["seed"],
        )

    def to_csv(self) -> str:
        """One line per metric x model with the columns of ROW_KEYS; numbers in full precision, an undefined
        one empty, `best` as true/false."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(ROW_KEYS)
        for row in self.rows:
            writer.writerow([_csv_value(row[key]) for key in ROW_KEYS])
        return out.getvalue()

    def to_markdown(self, digits: int = 3) -> str:
        """Two Markdown tables, models as rows and metrics as columns: the estimates with their intervals
        (the best in bold), then each model's difference to the best with its interval and p-value."""

        def table(cells: Callable[[str, str], str]) -> list[str]:
            header = ["model", *(f"{_markdown_text(metric)} ({_direction(self, metric)})" for metric in self.metrics)]
            lines = [_markdown_row(header), _markdown_row(["---"] * len(header))]
            for model in self.models:
                lines.append(_markdown_row([_markdown_text(model), *(cells(metric, model) for metric in self.metrics)]))
            return lines

        def estimate(metric: str, model: str) -> str:
            row = self.row(metric, model)
            text = _interval_text(row["estimate"], row["low"], row["high"], digits)
            return f"**{text}**" if row["best"] else text

        def difference(metric: str, model: str) -> str:
            return _difference_text(self.row(metric, model), digits, lambda p: p)

        return "\n".join(
            [
                self._caption() + " The best model per metric in bold.",
                "",
                *table(estimate),
                "",
                f"Difference to the best model (model minus best, paired on the same resamples), its {self._level()} "
                "interval and the two-sided paired-bootstrap p-value of no difference.",
                "",
                *table(difference),
                "",
            ]
        )

    def to_latex(self, digits: int = 3) -> str:
        """A booktabs table (needs \\usepackage{booktabs}), models as rows and metrics as columns: the
        estimates with their intervals (the best in bold), then, under a rule, each model's difference to the
        best with its interval and p-value. Model and metric names are escaped."""

        def number(text: str) -> str:
            return text.replace("-", "$-$")

        lines = [
            "% Needs \\usepackage{booktabs} in the preamble.",
            "\\begin{table}[t]",
            "\\centering",
            f"\\begin{{tabular}}{{l{'c' * len(self.metrics)}}}",
            "\\toprule",
            _latex_row(
                [
                    "Model",
                    *(
                        f"{_latex_text(metric)} ($\\{'uparrow' if self.higher_is_better[metric] else 'downarrow'}$)"
                        for metric in self.metrics
                    ),
                ]
            ),
            "\\midrule",
        ]
        for model in self.models:
            cells = []
            for metric in self.metrics:
                row = self.row(metric, model)
                text = number(_interval_text(row["estimate"], row["low"], row["high"], digits))
                cells.append(f"\\textbf{{{text}}}" if row["best"] else text)
            lines.append(_latex_row([_latex_text(model), *cells]))
        lines += [
            "\\midrule",
            _latex_row(
                [
                    f"\\multicolumn{{{len(self.metrics) + 1}}}{{l}}{{\\emph{{Difference to the best (paired), two-sided $p$}}}}"
                ]
            ),
            "\\midrule",
        ]
        for model in self.models:
            cells = [
                number(_difference_text(self.row(metric, model), digits, lambda p: f"${p}$")) for metric in self.metrics
            ]
            lines.append(_latex_row([_latex_text(model), *cells]))
        lines += [
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{{_latex_text(self._caption())}}}",
            "\\end{table}",
            "",
        ]
        return "\n".join(lines)

    def _level(self) -> str:
        return f"{100 * (1 - self.alpha):g} %"

    def _caption(self) -> str:
        return (
            f"{len(self.models)} models on {self.n_items} items: estimates with {self._level()} percentile bootstrap "
            f"intervals ({self.n_boot} resamples of the items, the same for every model; seed {self.seed})."
        )


def compare_models(
    score: Score,
    models: Sequence[str],
    n_items: int,
    higher_is_better: Mapping[str, bool],
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> ModelComparison:
    """Every model's metrics with percentile bootstrap intervals, and each model's paired difference to the
    best one, from the same resampled items.

    Args:
        score: score(model, items) -> {metric: value}, items an (n,) int array of item indices in
            0..n_items-1 that may repeat (a resample); every call for every model returns the same metrics.
            NaN marks a metric undefined on those items.
        models: the model names passed to `score`, unique.
        n_items: how many items are resampled (at least 1).
        higher_is_better: metric -> True where a higher value is better, False where lower is; every metric
            the score returns needs one.
        n_boot: resamples (0 gives the estimates with NaN intervals and p-values).
        alpha: 1 - coverage of the intervals.
        seed: seeds `metrics.bootstrap.resamples`.

    Returns:
        ModelComparison; resamples on which a figure is NaN are left out of its interval and p-value, as
        `metrics.bootstrap` leaves them out.
    """
    models = list(models)
    if not models:
        raise ValueError("models: give at least one model")
    duplicates = sorted({name for name in models if models.count(name) > 1})
    if duplicates:
        raise ValueError(f"models: each name must be unique, {', '.join(map(repr, duplicates))} is repeated")
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer) or n_items < 1:
        raise ValueError(f"n_items must be a whole number of at least 1, got {n_items!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be 0 or more, got {n_boot}")

    all_items = np.arange(n_items)
    first = score(models[0], all_items)
    metrics = list(first)
    if not metrics:
        raise ValueError(f"score returned no metric for model {models[0]!r}")
    unknown = [metric for metric in metrics if metric not in higher_is_better]
    if unknown:
        raise ValueError(
            f"higher_is_better: no direction for metric {', '.join(map(repr, unknown))}; "
            "say whether a higher value is better (True) or worse (False)"
        )

    # estimates[m, k]: model m's metric k on all items; replicates[m, k, b]: on resample b.
    estimates = np.array(
        [_values(first if m == 0 else score(model, all_items), metrics, model) for m, model in enumerate(models)]
    )
    replicates = np.empty((len(models), len(metrics), n_boot))
    for b, items in enumerate(resamples(n_items, n_boot, seed)):
        for m, model in enumerate(models):
            replicates[m, :, b] = _values(score(model, items), metrics, model)

    rows = []
    for k, metric in enumerate(metrics):
        best = _best(estimates[:, k], higher_is_better[metric])
        for m, model in enumerate(models):
            interval = _percentile_interval(float(estimates[m, k]), replicates[m, k], alpha)
            if best is None:
                difference, p_value = ConfidenceInterval(math.nan, math.nan, math.nan), math.nan
            elif m == best:
                difference, p_value = ConfidenceInterval(0.0, 0.0, 0.0), math.nan
            else:
                differences = replicates[m, k] - replicates[best, k]
                difference = _percentile_interval(float(estimates[m, k] - estimates[best, k]), differences, alpha)
                p_value = paired_p_value(differences)
            row = {
                "metric": metric,
                "model": model,
                "estimate": interval.estimate,
                "low": interval.low,
                "high": interval.high,
                "best": m == best,
                "difference": difference.estimate,
                "difference_low": difference.low,
                "difference_high": difference.high,
                "p_value": p_value,
            }
            rows.append(row)
    return ModelComparison(
        rows=rows,
        metrics=metrics,
        models=models,
        higher_is_better={metric: bool(higher_is_better[metric]) for metric in metrics},
        n_items=int(n_items),
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
    )


def paired_p_value(differences: np.ndarray) -> float:
    """Two-sided p-value of "no difference" from paired bootstrap differences (model minus best, one per
    resample; NaN ones left out): 2 * min(P(d <= 0), P(d >= 0)), each share counted as (count + 1) / (B + 1),
    capped at 1. NaN without a defined resample.

    Why this one and not the shifted null of Berg-Kirkpatrick et al. (2012): it reads the same resampled
    differences as the percentile interval beside it, so p < alpha goes with an interval that excludes 0
    (up to the +1 and the percentiles' interpolation), and it needs no assumption that shifting the
    differences to mean 0 gives their distribution under the null, which fails for metrics bounded near
    their limit (an accuracy near 1). The +1 counts the observed data as one draw (Davison and Hinkley
    1997), so a p-value is never 0: its least value is 2 / (B + 1).
    """
    differences = differences[~np.isnan(differences)]
    if len(differences) == 0:
        return math.nan
    n = len(differences)
    at_most_zero = (np.count_nonzero(differences <= 0) + 1) / (n + 1)
    at_least_zero = (np.count_nonzero(differences >= 0) + 1) / (n + 1)
    return float(min(1.0, 2 * min(at_most_zero, at_least_zero)))


def _values(result: Mapping[str, float], metrics: list[str], model: str) -> list[float]:
    """The score's values in the order of `metrics`; every call must return the same metrics."""
    if set(result) != set(metrics):
        raise ValueError(
            f"score for model {model!r} returned metrics {sorted(result)}, expected {sorted(metrics)} "
            "(every call must return the same metrics)"
        )
    return [float(result[metric]) for metric in metrics]


def _best(estimates: np.ndarray, higher_is_better: bool) -> int | None:
    """Index of the best defined estimate (the first on a tie), None when none is defined."""
    defined = ~np.isnan(estimates)
    if not defined.any():
        return None
    signed = np.where(defined, estimates if higher_is_better else -estimates, -np.inf)
    return int(np.argmax(signed))


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _csv_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def _direction(comparison: ModelComparison, metric: str) -> str:
    return "higher is better" if comparison.higher_is_better[metric] else "lower is better"


def _number_text(value: float, digits: int) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def _interval_text(estimate: float, low: float, high: float, digits: int) -> str:
    """'0.812 [0.790, 0.830]'; the estimate alone where the interval is undefined (no resample)."""
    text = _number_text(estimate, digits)
    if math.isnan(low) or math.isnan(high):
        return text
    return f"{text} [{_number_text(low, digits)}, {_number_text(high, digits)}]"


def _difference_text(row: Mapping[str, Any], digits: int, math_text: Callable[[str], str]) -> str:
    """'-0.041 [-0.070, -0.012], p = 0.004' ('best' for the best model itself); `math_text` wraps the
    p-value's expression (LaTeX math mode)."""
    if row["best"]:
        return "best"
    text = _interval_text(row["difference"], row["difference_low"], row["difference_high"], digits)
    p_value = row["p_value"]
    if math.isnan(p_value):
        return text
    smallest = 10.0**-digits
    p_text = f"p < {smallest:.{digits}f}" if p_value < smallest else f"p = {p_value:.{digits}f}"
    return f"{text}, {math_text(p_text)}"


# Backslash-escaped so that a model name reads as text: a table cell's bar, emphasis, code, links and HTML.
_MARKDOWN_SPECIAL = set("\\`*_[]<>|~")


def _markdown_text(text: str) -> str:
    return "".join(f"\\{char}" if char in _MARKDOWN_SPECIAL else char for char in text)


def _markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


_LATEX_SPECIAL = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "<": "\\textless{}",
    ">": "\\textgreater{}",
    # A row starting with "[" would be read as the optional argument of the previous row's \\\\.
    "[": "{[}",
    "]": "{]}",
}


def _latex_text(text: str) -> str:
    """`text` as LaTeX text: its special characters escaped, line breaks as spaces."""
    return "".join(_LATEX_SPECIAL.get(char, char) for char in " ".join(text.splitlines()))


def _latex_row(cells: list[str]) -> str:
    return " & ".join(cells) + " \\\\"
