"""Agreement figures of a project's annotations, for the `agreement` command and the report page.

The annotations are streamed with values_list into arrays (`load_annotations`), worker answers in long form
(never a workers x items matrix, whatever the crowd); the figures come from the pure functions in
metrics.agreement, metrics.pairwise and metrics.bootstrap (`agreement_figures`). Units are items: with
per-atom task types each atom is an item.

Gold check items are quality control, not data, and are left out everywhere; so are the answers of workers
an author blocked with their answers excluded.

Imported votes (ChaosNLI: up to 100 per item, stored as one row per label with its count) carry no worker
ids. They enter every figure that needs only each item's multiset of values: Krippendorff's alpha from
value counts and the split-half JSD. Figures between annotator pairs, and the held-out human baseline, use
worker annotations only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from django.db.models import Sum

from annotation.models import Annotation, Project
from annotation.services.analysis.report_tables import report_tables
from metrics.agreement import (
    check_one_value_each,
    human_baseline,
    interval_alpha_of_counts,
    item_mean_abs_difference,
    item_pair_agreement,
    krippendorff_alpha,
    split_half_jsd,
    value_codes,
)
from metrics.bootstrap import ConfidenceInterval, bootstrap_ci, bootstrap_ci_of_counts
from metrics.pairwise import annotator_pairs, mean_pair_statistic

CONFIDENCE = 0.95
STREAM_CHUNK = 10_000

# The pairwise figure reported at each Krippendorff level (the papers' choices: kappa for validity,
# Kendall's tau for the -2..+2 effect, correlations for the slider).
PAIRWISE_STATISTIC = {"nominal": "cohen_kappa", "ordinal": "kendall_tau", "interval": "pearson"}


class WorkerAnswers(NamedTuple):
    """Worker annotations in long form, one row per answer, by item: 16 bytes an answer, where a reliability
    matrix takes 8 bytes per worker and item (gigabytes for a crowd of thousands).

    items: (answers,) int32 codes, non-decreasing: the item's place in AnnotationTable.item_ids.
    workers: (answers,) int32 codes, 0 .. n_workers - 1.
    values: (answers,) floats; categorical values are coded as their index in the table's categories.
    """

    items: np.ndarray
    workers: np.ndarray
    values: np.ndarray


@dataclass
class AnnotationTable:
    """A project's annotations as arrays.

    level: the task type's Krippendorff level ("nominal", "ordinal" or "interval").
    categories: the ordered values of a categorical scale (labels, or -2..+2); None for the slider.
    item_ids: (items,) every item with at least one annotation, worker or imported: first the
        n_worker_items that workers answered, then those that hold imported votes only.
    counts: (items, categories) votes per value, worker and imported together, rows in item_ids order;
        None for the slider.
    answers: the worker annotations; n_workers: how many workers gave them.
    n_annotations: all votes (an imported row counts its `count`); n_imported: the imported ones.
    """

    level: str
    categories: list | None
    item_ids: np.ndarray
    counts: np.ndarray | None
    answers: WorkerAnswers
    n_worker_items: int
    n_workers: int
    n_annotations: int
    n_imported: int

    def answers_per_item(self) -> np.ndarray:
        """(n_worker_items,) how many worker annotations each item has."""
        return np.bincount(self.answers.items, minlength=self.n_worker_items)

    def values_by_item(self) -> np.ndarray:
        """Worker annotations packed per item, ascending: shape (most annotations on one item,
        n_worker_items), NaN-padded.

        Alpha and the held-out baseline depend only on each item's values, not on who gave them; packing
        keeps their arrays (and bootstrap resamples) small however many workers there are.
        """
        items = self.answers.items
        if len(items) and (np.diff(items) < 0).any():
            raise ValueError("worker answers must come by item (WorkerAnswers.items non-decreasing)")
        sizes = self.answers_per_item()
        packed = np.full((int(sizes.max()) if len(sizes) else 0, self.n_worker_items), np.nan)
        first_of_item = (np.cumsum(sizes) - sizes).astype(items.dtype)
        packed[np.arange(len(items), dtype=items.dtype) - first_of_item[items], items] = self.answers.values
        packed.sort(axis=0)  # in place; NaN sorts last
        return packed


# The pairwise interval costs about 70 ns per value shared by an annotator pair, per resample (measured with
# Pearson's r, the dearest): past this many the report page and the API leave it out (about 3.5 s) rather
# than keep the author waiting.
INTERACTIVE_RESAMPLED_VALUES = 50_000_000


def load_annotations(project: Project) -> AnnotationTable:
    """Stream the project's annotations into an AnnotationTable (no per-row ORM objects). Worker answers are
    coded as they arrive, STREAM_CHUNK rows at a time, into three columns sized by a count (an item's and a
    worker's int32 code, the value as a float): 16 bytes an answer, where rows of Python tuples take ten
    times that."""
    categories = project.task.categories(project.options)
    answers = Annotation.objects.counted().filter(item__project=project)
    capacity = answers.filter(worker__isnull=False).count()
    item_codes = np.empty(capacity, dtype=np.int32)
    worker_codes = np.empty(capacity, dtype=np.int32)
    values = np.empty(capacity)
    item_ids: list[int] = []  # code -> id, in order of first appearance (rows come by item)
    worker_index: dict[int, int] = {}  # id -> code
    imported_rows = []
    filled = 0
    pending: list[tuple] = []

    def keep_pending():
        nonlocal filled, item_codes, worker_codes, values
        end = filled + len(pending)
        if end > len(values):  # answers submitted since the count
            item_codes, worker_codes, values = (np.resize(column, end) for column in (item_codes, worker_codes, values))
        try:
            values[filled:end] = value_codes([value for _, _, value in pending], categories, first_row=filled)
        except ValueError as error:
            raise ValueError(f"project {project.slug}: worker annotations: {error}") from None
        item_codes[filled:end] = [item for item, _, _ in pending]
        worker_codes[filled:end] = [worker for _, worker, _ in pending]
        filled = end
        pending.clear()

    stream = (
        answers.order_by("item_id", "id")  # items in import order: seeded figures do not depend on the database
        .values_list("item_id", "worker_id", "value", "count")
        .iterator(chunk_size=STREAM_CHUNK)
    )
    for item_id, worker_id, value, count in stream:
        if worker_id is None:
            imported_rows.append((item_id, value, count))
            continue
        if not item_ids or item_ids[-1] != item_id:
            item_ids.append(item_id)
        pending.append((len(item_ids) - 1, worker_index.setdefault(worker_id, len(worker_index)), value))
        if len(pending) == STREAM_CHUNK:
            keep_pending()
    if pending:
        keep_pending()

    answers = WorkerAnswers(item_codes[:filled], worker_codes[:filled], values[:filled])
    try:
        check_one_value_each(answers.items, answers.workers, item_ids, list(worker_index))
    except ValueError as error:
        raise ValueError(f"project {project.slug}: worker annotations: {error}") from None
    n_worker_items = len(item_ids)

    imported_items = [item_id for item_id, _, _ in imported_rows]
    item_ids = pd.Index(item_ids).append(pd.Index(imported_items)).unique().to_numpy()
    counts = None
    if categories is not None:
        column = {category: index for index, category in enumerate(categories)}
        position = pd.Index(item_ids)
        counts = np.zeros((len(item_ids), len(categories)))
        cells = answers.items.astype(np.int64) * len(categories) + answers.values.astype(np.int64)
        worker_votes = np.bincount(cells, minlength=n_worker_items * len(categories))
        counts[:n_worker_items] = worker_votes.reshape(n_worker_items, len(categories))
        for item_id, value, count in imported_rows:
            if value not in column:
                raise ValueError(
                    f"project {project.slug}: item {item_id}: imported value {value!r} is not one of {categories}"
                )
            counts[position.get_loc(item_id), column[value]] += count
    return AnnotationTable(
        level=project.task.agreement_level,
        categories=categories,
        item_ids=item_ids,
        counts=counts,
        answers=answers,
        n_worker_items=n_worker_items,
        n_workers=len(worker_index),
        n_annotations=filled + sum(count for _, _, count in imported_rows),
        n_imported=sum(count for _, _, count in imported_rows),
    )


def _finite(number) -> float | None:
    """A float for JSON: None where the metric is undefined (NaN)."""
    return None if number is None or np.isnan(number) else float(number)


def _nan_on_error(statistic: Callable[..., float]) -> Callable[..., float]:
    """A bootstrap resample can lose every pairable item; count it as undefined rather than fail."""

    def safe(*arrays):
        try:
            return statistic(*arrays)
        except ValueError:
            return float("nan")

    return safe


def _interval(statistic, value_counts, resamples: int, seed: int) -> list[float] | None:
    """[low, high] percentile interval over items (the rows of value_counts: a resample is a copy of the
    drawn rows), or None without resamples or when undefined."""
    if resamples <= 0:
        return None
    return _bounds(
        bootstrap_ci(_nan_on_error(statistic), value_counts, n_boot=resamples, alpha=1 - CONFIDENCE, seed=seed)
    )


def _interval_of_counts(statistic_of_counts, items: int, resamples: int, seed: int) -> list[float] | None:
    """[low, high] percentile interval over items of a statistic of how often each item is drawn
    (metrics.bootstrap.bootstrap_ci_of_counts), or None without resamples or when undefined."""
    if resamples <= 0:
        return None
    return _bounds(
        bootstrap_ci_of_counts(_nan_on_error(statistic_of_counts), items, resamples, alpha=1 - CONFIDENCE, seed=seed)
    )


def _bounds(ci: ConfidenceInterval) -> list[float] | None:
    return None if np.isnan(ci.low) else [float(ci.low), float(ci.high)]


def agreement_figures(
    table: AnnotationTable,
    bootstrap: int = 1000,
    seed: int = 0,
    label_distributions: bool = False,
    max_resampled_values: int | None = None,
) -> dict:
    """The agreement figures of an AnnotationTable (see project_agreement for the keys).

    label_distributions: items carry distributions of many categorical votes: add the split-half JSD.
    max_resampled_values: skip the pairwise interval when the values annotator pairs share x resamples
        exceed this; None: no limit.
    """
    level = table.level
    unavailable: dict[str, str] = {}
    sizes = table.counts.sum(axis=1) if table.counts is not None else table.answers_per_item()
    pairable = sizes >= 2

    figures = _counts_only(
        level,
        len(table.item_ids),
        pairable.sum(),
        table.n_annotations,
        table.n_imported,
        table.n_workers,
        bootstrap,
        seed,
    )
    # The pairwise figures first: they need no packed values, so the two never take memory together. Their
    # reasons join `unavailable` after alpha's, in the order the report lists them.
    pairwise_unavailable: dict[str, str] = {}
    figures["pairwise"] = _pairwise(table, bootstrap, seed, max_resampled_values, pairwise_unavailable)
    packed = table.values_by_item()

    # Krippendorff's alpha: from value counts on categorical scales (imported votes included), from the
    # packed worker values on the slider. Items with one value carry no pairs and are left out.
    if not pairable.any():
        unavailable["krippendorff_alpha"] = "no item has two or more annotations yet"
    else:
        estimate, interval = _alpha(table, packed, pairable, bootstrap, seed)
        figures["krippendorff_alpha"] = _finite(estimate)
        if figures["krippendorff_alpha"] is None:
            unavailable["krippendorff_alpha"] = "every annotation has the same value, so no disagreement is expected"
        else:
            figures["krippendorff_alpha_ci"] = interval
    unavailable.update(pairwise_unavailable)

    if level == "nominal":
        unavailable["human_baseline"] = "scored with correlations and MSE, which need a numeric scale"
    elif ((~np.isnan(packed)).sum(axis=0) >= 2).any():
        baseline = human_baseline(packed, aggregate="median", seed=seed)
        figures["human_baseline"] = {
            "aggregate": "median",
            "pearson": _finite(baseline["pearson"]),
            "spearman": _finite(baseline["spearman"]),
            "mse": _finite(baseline["mse"]),
            "items": baseline["units"],
        }
    else:
        unavailable["human_baseline"] = "no item has two or more worker annotations yet"

    if not label_distributions:
        unavailable["split_half_jsd"] = "reported for projects that collect label distributions"
    elif not pairable.any():
        unavailable["split_half_jsd"] = "no item has two or more annotations yet"
    else:
        figures["split_half_jsd"] = split_half_jsd(table.counts[pairable], seed=seed)

    figures["unavailable"] = unavailable
    return figures


def _alpha(table: AnnotationTable, packed: np.ndarray, pairable: np.ndarray, bootstrap: int, seed: int):
    """(alpha, its interval) over the pairable items."""
    level = table.level
    if table.counts is not None:
        counts = table.counts[pairable]
        return krippendorff_alpha(value_counts=counts, level=level), _interval(
            lambda resampled: krippendorff_alpha(value_counts=resampled, level=level), counts, bootstrap, seed
        )
    # A continuous scale, so interval alpha (tasktypes.checks): its interval from per-item sums, without copies.
    values = packed if pairable.all() else packed[:, pairable]
    estimate = krippendorff_alpha(reliability_data=values, level=level)
    return estimate, _interval_of_counts(interval_alpha_of_counts(values), values.shape[1], bootstrap, seed)


def _pairwise(
    table: AnnotationTable, bootstrap: int, seed: int, max_resampled_values: int | None, unavailable: dict
) -> dict | None:
    """The mean over annotator pairs of the level's pairwise statistic, with its interval over items."""
    level = table.level
    answers = table.answers
    if len(answers.values) == 0:
        unavailable["pairwise"] = (
            "imported votes carry no annotator ids; only value-count figures apply to them"
            if table.n_imported
            else "no worker annotations yet"
        )
        return None
    # Items with one worker annotation pair no one; the bootstrap resamples the others only (and where every
    # item is shared, nothing is copied).
    shared_items = table.answers_per_item() >= 2
    if shared_items.all():
        pairs = annotator_pairs(answers.items, answers.workers, answers.values)
    else:
        shared = shared_items[answers.items]
        unit_of_item = (np.cumsum(shared_items) - 1).astype(answers.items.dtype)
        pairs = annotator_pairs(unit_of_item[answers.items[shared]], answers.workers[shared], answers.values[shared])
    statistic = PAIRWISE_STATISTIC[level]
    value = _finite(mean_pair_statistic(pairs, statistic))
    extra = {"spearman": _finite(mean_pair_statistic(pairs, "spearman"))} if level == "interval" else {}

    if value is None:
        unavailable["pairwise"] = "no two annotators share two or more items on which both vary"
        return None
    resamples = bootstrap
    shared_values = int(pairs.bounds[-1])
    if max_resampled_values is not None and shared_values * bootstrap > max_resampled_values:
        resamples = 0
        unavailable["pairwise_ci"] = (
            f"{shared_values} values shared by annotator pairs x {bootstrap} resamples is more than this page "
            "computes; the agreement command computes it"
        )
    ci = _interval_of_counts(
        lambda counts: mean_pair_statistic(pairs, statistic, counts), int(shared_items.sum()), resamples, seed
    )
    return {"statistic": statistic, "value": value, "ci": ci, "pairs": len(pairs.pairs), **extra}


def project_agreement(
    project: Project, bootstrap: int = 1000, seed: int = 0, max_resampled_values: int | None = None
) -> dict:
    """Agreement figures of a project's annotations.

    Returns a JSON-ready dict:
        project, task_type, level: the Krippendorff level of the task type;
        n_items (items with an annotation), n_items_pairable (with two or more), n_annotations (imported
            votes count one each), n_imported_votes, n_workers;
        krippendorff_alpha and krippendorff_alpha_ci ([low, high], percentile bootstrap over items);
        pairwise: {"statistic": cohen_kappa | kendall_tau | pearson, "value", "ci", "pairs" (worker pairs
            sharing two or more items), and for the slider "spearman"}: the mean over those pairs (pairs
            where the statistic is undefined, e.g. a constant annotator, are left out by the metric);
        human_baseline: {"aggregate": "median", "pearson", "spearman", "mse", "items"}: one worker
            annotation per item held out against the median of the others (ordinal and interval scales);
        split_half_jsd: mean JS distance between two random halves of each item's votes (task types that
            collect label distributions);
        bootstrap: the resampling settings; unavailable: {figure: reason} for every figure left as None
            ("pairwise_ci" when max_resampled_values skipped that interval; "agreement", with every figure
            None and level None, for a task type to which agreement does not apply).
    """
    if project.task.agreement_level is None:
        return _no_figures(project, bootstrap, seed)
    return _project_figures(project, load_annotations(project), bootstrap, seed, max_resampled_values)


def _project_figures(project, table, bootstrap, seed, max_resampled_values) -> dict:
    figures = agreement_figures(
        table,
        bootstrap,
        seed,
        label_distributions=project.task.label_distributions,
        max_resampled_values=max_resampled_values,
    )
    return {"project": project.slug, "task_type": project.task_type, **figures}


def _counts_only(level, items, pairable, annotations, imported, workers, bootstrap, seed) -> dict:
    """The figures dict with its counts filled in and every figure still None."""
    return {
        "level": level,
        "n_items": int(items),
        "n_items_pairable": int(pairable),
        "n_annotations": int(annotations),
        "n_imported_votes": int(imported),
        "n_workers": int(workers),
        "krippendorff_alpha": None,
        "krippendorff_alpha_ci": None,
        "pairwise": None,
        "human_baseline": None,
        "split_half_jsd": None,
        "bootstrap": {"resamples": int(bootstrap), "seed": int(seed), "confidence": CONFIDENCE, "over": "items"},
    }


def _no_figures(project, bootstrap, seed) -> dict:
    """The counts of a project whose task type has no agreement figures, with the task type's reason."""
    annotations = Annotation.objects.counted().filter(item__project=project)
    per_item = annotations.order_by().values("item").annotate(votes=Sum("count"))
    figures = _counts_only(
        None,
        per_item.count(),
        per_item.filter(votes__gte=2).count(),
        annotations.aggregate(votes=Sum("count"))["votes"] or 0,
        annotations.filter(worker=None).aggregate(votes=Sum("count"))["votes"] or 0,
        annotations.exclude(worker=None).order_by().values("worker").distinct().count(),
        bootstrap,
        seed,
    )
    unavailable = {"agreement": project.task.agreement_unavailable}
    return {"project": project.slug, "task_type": project.task_type, **figures, "unavailable": unavailable}


# ---------------------------------------------------------------- the report page


def _settled_items(project: Project):
    """(example id, source label, update type, final value) of every item with a final value."""
    rows = (
        project.items.filter(is_gold=False)
        .order_by()
        .values_list("example_id", "example__source_label", "example__update_type", "aggregate", "adjudicated")
        .iterator(chunk_size=STREAM_CHUNK)
    )
    for example_id, source_label, update_type, aggregate, adjudicated in rows:
        final = adjudicated if adjudicated is not None else aggregate
        if isinstance(final, (int, float)) and not isinstance(final, bool):
            yield example_id, source_label, update_type, float(final)


def _agreement_plot(table: AnnotationTable, project: Project) -> dict:
    if table.level == "nominal":
        values = item_pair_agreement(table.counts)
        xlabel, value_range = "share of annotator pairs that agree on the item", (0.0, 1.0)
    else:
        values = item_mean_abs_difference(table.values_by_item())
        xlabel, value_range = project.task.difference_axis(project.options)
    plot = {"title": "Agreement per item", "svg": None, "empty": None}
    if len(values) == 0:
        plot["empty"] = "No item has two or more annotations yet."
    else:
        plot["svg"] = agreement_histogram_svg(values, xlabel, value_range=value_range)
    return plot


def project_report(
    project: Project, bootstrap: int = 1000, seed: int = 0, max_resampled_values: int | None = None
) -> dict:
    """What the report page shows: {"figures": project_agreement(...), "plots": [plot, ...], "tables": [...]}:
    report_figures' figures and plots with report_tables' tables."""
    return {**report_figures(project, bootstrap, seed, max_resampled_values), "tables": report_tables(project)}


def report_figures(
    project: Project, bootstrap: int = 1000, seed: int = 0, max_resampled_values: int | None = None
) -> dict:
    """The report's computed part, {"figures": project_agreement(...), "plots": [plot, ...]}: the bootstrap
    intervals and the plots, which the report job computes (analysis.report_job) so the page never does.

    Each plot is {"title", "svg" (an <svg> element or None), "empty" (why there is no plot, or None)}.
    """
    task = project.task
    task_plot = task.report_plot(list(_settled_items(project)))
    if task.agreement_level is None:
        figures, agreement_plot = _no_figures(project, bootstrap, seed), None
    else:
        table = load_annotations(project)
        figures = _project_figures(project, table, bootstrap, seed, max_resampled_values)
        agreement_plot = _agreement_plot(table, project)
    return {"figures": figures, "plots": [plot for plot in (task_plot, agreement_plot) if plot is not None]}


def agreement_histogram_svg(
    values: Sequence[float], xlabel: str, value_range: tuple[float, float] | None = None, bins: int = 20
) -> str:
    """Histogram of a per-item agreement figure (share of agreeing pairs, or mean absolute difference).

    values: (items,) one figure per item; xlabel: what it measures; value_range: the x range of the bins
    (default: the data's range).
    """
    from matplotlib.figure import Figure

    from common.plotting import ACCENT, WARNING, figure_svg

    values = np.asarray(values, dtype=float)
    figure = Figure(figsize=(6, 3.2))
    axes = figure.add_subplot()
    axes.hist(values, bins=bins, range=value_range, color=ACCENT, edgecolor="white")
    axes.axvline(float(np.mean(values)), color=WARNING, linewidth=2, label=f"mean {np.mean(values):.3f}")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("items")
    axes.set_title(f"Agreement per item ({len(values)} items)")
    axes.legend(fontsize="small")
    return figure_svg(figure)
