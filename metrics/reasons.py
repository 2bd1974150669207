"""Agreement of two taggers who each give a set of categories to the same units (disagreement reasons:
Jiang & de Marneffe, TACL 2022, where two annotators tag each NLI item with one or more reasons).

Each category is judged as its own yes/no question, so two sets that share some categories agree in part:
per category, Cohen's kappa of the two taggers' yes/no over the units; the summary is the mean over the
categories where kappa is defined, beside the share of units tagged with identical sets.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypedDict

import numpy as np

from metrics.pairwise import cohen_kappa_pairwise


class SetAgreement(TypedDict):
    units: int
    identical: float | None
    kappa: dict[str, float | None]
    mean_kappa: float | None


def set_agreement(
    first: Sequence[Collection[str]], second: Sequence[Collection[str]], categories: Sequence[str]
) -> SetAgreement:
    """How far two taggers agree on the category sets they gave the same units.

    Args:
        first, second: one collection of categories per unit, both of length n (unit i is the same in both).
        categories: the categories to score; any others the taggers used are scored too, after these.

    Returns:
        units: n.
        identical: share of units where both sets are equal (None when n is 0).
        kappa: per category, Cohen's kappa of "tagger used it on this unit" (None where undefined: neither
            tagger used it, or both used it on every unit).
        mean_kappa: the mean of the defined kappas (None when none is).
    """
    if len(first) != len(second):
        raise ValueError(f"first and second must tag the same units, got {len(first)} and {len(second)}")
    first_sets = [frozenset(tags) for tags in first]
    second_sets = [frozenset(tags) for tags in second]
    used = set().union(*first_sets, *second_sets)
    scored = list(dict.fromkeys([*categories, *sorted(used - set(categories))]))
    kappa: dict[str, float | None] = {}
    for category in scored:
        matrix = np.array(
            [[category in tags for tags in first_sets], [category in tags for tags in second_sets]], dtype=float
        )
        value = cohen_kappa_pairwise(matrix, min_shared_units=1)
        kappa[category] = None if np.isnan(value) else float(value)
    defined = [value for value in kappa.values() if value is not None]
    units = len(first_sets)
    return {
        "units": units,
        "identical": sum(a == b for a, b in zip(first_sets, second_sets)) / units if units else None,
        "kappa": kappa,
        "mean_kappa": float(np.mean(defined)) if defined else None,
    }
