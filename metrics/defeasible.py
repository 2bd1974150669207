"""Defeasible NLI with atoms: atom and critical-atom accuracy, and inferential consistency.

An example is (P, H, U) with gold label "strengthener" or "weakener". Its atoms carry a gold effect score
in -2..+2 (how U changes the belief in the atom), a validity flag and the model's label for (P, atom, U):
"strengthener", "weakener" or "neutral" (a 3-way model) or only the first two (a binary model).

Tables used below:
  examples: one row per example, columns gold_label, predicted_label (position = example index).
  atoms: one row per atom, columns example (example index), gold (int), valid (bool), predicted (str),
         buckets (tuple of bucket ids; only read for critical atoms).
"""

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from metrics.classification import share

STRENGTHENER, WEAKENER, NEUTRAL = "strengthener", "weakener", "neutral"


def atom_gold_label(scores) -> np.ndarray:
    """Gold labels from -2..+2 scores: > 0 strengthener, < 0 weakener, 0 neutral; shape as `scores`."""
    scores = np.asarray(scores)
    return np.where(scores > 0, STRENGTHENER, np.where(scores < 0, WEAKENER, NEUTRAL)).astype(object)


def critical_atoms(atoms: pd.DataFrame, example_labels) -> np.ndarray:
    """(n_atoms,) mask of critical atoms.

    The critical atoms of an example are its valid atoms whose score has the example's polarity (+ for a
    strengthener, - for a weakener) with the largest magnitude; ties make several critical atoms, and an
    example none of whose valid atoms has its polarity has none.
    """
    labels = np.asarray(example_labels, dtype=object)[atoms["example"].to_numpy()]
    scores = atoms["gold"].to_numpy()
    sign = np.where(labels == STRENGTHENER, 1, -1)
    candidate = atoms["valid"].to_numpy(dtype=bool) & (np.sign(scores) == sign)
    magnitude = pd.Series(np.where(candidate, np.abs(scores), 0), index=atoms.index)
    strongest = magnitude.groupby(atoms["example"]).transform("max").to_numpy()
    return candidate & (np.abs(scores) == strongest)


def bucket_accuracies(correct, example_buckets: Sequence[Iterable[Hashable]]) -> pd.DataFrame:
    """Accuracy theta_b of each bucket of examples.

    correct: (n,) bools, whether the model got example i right; example_buckets: for each example the ids
    of the buckets its critical atoms fall in (empty for an example without critical atoms, which is left
    out). An example in k distinct buckets counts with weight 1/k in each, so that it weighs 1 in total.
    Returns one row per bucket (index: bucket id) with columns support (sum of weights), n_examples, theta.
    """
    rows: list[tuple] = []
    for is_correct, buckets in zip(np.asarray(correct, dtype=bool), example_buckets):
        distinct = set(buckets)
        if not distinct:
            continue
        rows.extend((bucket, 1.0 / len(distinct), float(is_correct)) for bucket in distinct)
    table = pd.DataFrame(rows, columns=["bucket", "weight", "correct"])
    table["weighted_correct"] = table["weight"] * table["correct"]
    grouped = table.groupby("bucket", sort=True)
    result = pd.DataFrame(
        {
            "support": grouped["weight"].sum(),
            "n_examples": grouped.size(),
        }
    )
    result["theta"] = grouped["weighted_correct"].sum() / result["support"]
    return result


def inferential_consistency(theta, support=None) -> float | None:
    """I_C = mean_b(theta_b^2) + mean_b((1 - theta_b)^2) over buckets b.

    theta: (n_buckets,) bucket accuracies; support: optional (n_buckets,) weights for a weighted mean
    (None: every bucket counts the same). A bucket of one example has theta 0 or 1 and adds 1.
    None when there is no bucket.
    """
    theta = np.asarray(theta, dtype=float)
    if theta.size == 0:
        return None
    agreement = theta**2 + (1 - theta) ** 2
    return float(np.average(agreement, weights=None if support is None else np.asarray(support, float)))


def defeasible_scores(examples: pd.DataFrame, atoms: pd.DataFrame, binary_atoms: bool, weighted: bool = False) -> dict:
    """All defeasible-atom figures for one model.

    binary_atoms: the model only says strengthener/weakener on atoms, so atom accuracy leaves out atoms
    whose gold score is 0. weighted: average I_C over buckets weighted by bucket support.
    Examples without critical atoms count in full accuracy only.
    """
    full_correct = (examples["gold_label"] == examples["predicted_label"]).to_numpy(dtype=bool)
    valid = atoms[atoms["valid"].astype(bool)]
    valid_gold = atom_gold_label(valid["gold"])
    scored = valid_gold != NEUTRAL if binary_atoms else np.ones(len(valid), dtype=bool)
    atom_correct = valid["predicted"].to_numpy(dtype=object) == valid_gold

    critical = atoms[critical_atoms(atoms, examples["gold_label"])]
    critical_correct = pd.Series(
        critical["predicted"].to_numpy(dtype=object) == atom_gold_label(critical["gold"]), index=critical.index
    )
    all_critical_correct = critical_correct.groupby(critical["example"]).all()
    with_critical = all_critical_correct.index.to_numpy()
    full_given = full_correct[with_critical]
    some_wrong = ~all_critical_correct.to_numpy(dtype=bool)

    example_buckets = [
        [bucket for buckets in group for bucket in buckets] for _, group in critical.groupby("example")["buckets"]
    ]
    buckets = bucket_accuracies(full_given, example_buckets)
    return {
        "n": len(examples),
        "n_with_critical_atoms": len(with_critical),
        "n_without_critical_atoms": int(len(examples) - len(with_critical)),
        "n_valid_atoms": len(valid),
        "n_scored_atoms": int(scored.sum()),
        "n_critical_atoms": len(critical),
        "atom_labels": "binary" if binary_atoms else "ternary",
        "full_accuracy": share(full_correct),
        "atom_accuracy": share(atom_correct[scored]),
        "critical_atom_accuracy": share(critical_correct.to_numpy(dtype=bool)),
        "p_full_correct_given_critical_correct": share(full_given[~some_wrong]),
        "p_full_correct_given_critical_wrong": share(full_given[some_wrong]),
        "n_buckets": len(buckets),
        "n_single_example_buckets": int((buckets["n_examples"] == 1).sum()),
        "inferential_consistency": inferential_consistency(buckets["theta"], buckets["support"] if weighted else None),
        "bucket_mean": "weighted by support" if weighted else "unweighted",
        "buckets": [
            {
                "bucket": str(bucket),
                "support": float(row.support),
                "n_examples": int(row.n_examples),
                "theta": float(row.theta),
            }
            for bucket, row in buckets.iterrows()
        ],
    }


# Grouping equivalent atoms into buckets -----------------------------------------------------------------


def maximal_cliques(neighbours: Mapping[Any, set]) -> list[frozenset]:
    """All maximal cliques of an undirected graph given as node -> set of neighbours.

    Bron-Kerbosch with pivoting (Tomita et al. 2006). networkx has find_cliques, but networkx is not a
    dependency of this project (it only arrives with torch in the `ml` extra), and the graphs here have a
    few hundred nodes, so a dozen lines do.
    """
    cliques = []

    def expand(clique: set, candidates: set, excluded: set):
        if not candidates and not excluded:
            cliques.append(frozenset(clique))
            return
        pivot = max(candidates | excluded, key=lambda node: len(neighbours[node] & candidates))
        for node in list(candidates - neighbours[pivot]):
            expand(clique | {node}, candidates & neighbours[node], excluded & neighbours[node])
            candidates = candidates - {node}
            excluded = excluded | {node}

    expand(set(), set(neighbours), set())
    return cliques


def equivalent_atom_groups(
    texts: list[str],
    embed: Callable[[list[str]], np.ndarray],
    entails: Callable[[list[str], list[str]], np.ndarray],
    threshold: float = 0.75,
) -> list[list[str]]:
    """Group atom texts that say the same thing: the maximal cliques of the graph linking two atoms when
    the cosine similarity of their embeddings is >= threshold AND each entails the other.

    embed(texts) -> (n, d) embeddings; entails(premises, hypotheses) -> (m,) bools, whether each premise
    entails its hypothesis (an NLI model). Identical texts are one node. Groups are sorted lists of texts,
    in a stable order; an atom equivalent to nothing forms a group of its own.
    """
    unique = sorted(set(texts))
    vectors = np.asarray(embed(unique), dtype=float)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similar = np.argwhere(np.triu(vectors @ vectors.T >= threshold, k=1))
    neighbours: dict[str, set[str]] = {text: set() for text in unique}
    if len(similar):
        first = [unique[i] for i in similar[:, 0]]
        second = [unique[j] for j in similar[:, 1]]
        both_ways = np.asarray(entails(first, second), bool) & np.asarray(entails(second, first), bool)
        for a, b in zip(np.array(first, dtype=object)[both_ways], np.array(second, dtype=object)[both_ways]):
            neighbours[a].add(b)
            neighbours[b].add(a)
    return sorted(sorted(clique) for clique in maximal_cliques(neighbours))


def bucket_ids(groups: list[list[str]]) -> dict[str, list[str]]:
    """text -> ids ("b0", "b1", ...) of the groups holding it, ready to put on atoms as `bucket`."""
    ids: dict[str, list[str]] = {}
    for number, group in enumerate(groups):
        for text in group:
            ids.setdefault(text, []).append(f"b{number}")
    return ids
