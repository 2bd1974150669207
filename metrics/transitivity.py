"""Transitive self-consistency of an NLI model on (P, H, H') triples, H' an antonym edit of H.

All labels are the model's own, as "E", "N", "C": (n,) arrays label_p_h = M(P, H), label_h_m = M(H, H'),
label_m_h = M(H', H), label_p_m = M(P, H').
"""

import numpy as np

# rule -> (label of (P, H), label of (H, H'), test that (P, H') passes)
RULES = {
    "rule1": ("E", "E", lambda p_m: p_m == "E"),  # E(P,H) & E(H,H') -> E(P,H')
    "rule2": ("E", "C", lambda p_m: p_m == "C"),  # E(P,H) & C(H,H') -> C(P,H')
    "rule3": ("N", "E", lambda p_m: p_m != "C"),  # N(P,H) & E(H,H') -> not C(P,H')
    "rule4": ("N", "C", lambda p_m: p_m != "E"),  # N(P,H) & C(H,H') -> not E(P,H')
}


def transitivity_scores(label_p_h, label_h_m, label_m_h, label_p_m) -> dict:
    """Mutual entailment / contradiction rates (shares of all triples) and, per rule, the inconsistency
    rate: violations over the kept triples (M(H,H') == M(H',H) in {E, C}) where the rule's premise holds;
    None for a rule no kept triple reaches."""
    p_h, h_m, m_h, p_m = (np.asarray(labels, dtype=object) for labels in (label_p_h, label_h_m, label_m_h, label_p_m))
    n = int(p_h.size)
    mutual_entailment = (h_m == "E") & (m_h == "E")
    mutual_contradiction = (h_m == "C") & (m_h == "C")
    kept = mutual_entailment | mutual_contradiction
    rates: dict[str, float | None]
    counts: dict[str, object]
    rates, counts = (
        {},
        {
            "kept": int(kept.sum()),
            "mutual_entailment": int(mutual_entailment.sum()),
            "mutual_contradiction": int(mutual_contradiction.sum()),
        },
    )
    for name, (first, second, holds) in RULES.items():
        applies = kept & (p_h == first) & (h_m == second)
        violations = applies & ~np.array([holds(label) for label in p_m], dtype=bool)
        counts[name] = {"applicable": int(applies.sum()), "violations": int(violations.sum())}
        rates[name] = float(violations.sum() / applies.sum()) if applies.any() else None
    return {
        "n": n,
        "mutual_entailment_rate": float(mutual_entailment.mean()) if n else None,
        "mutual_contradiction_rate": float(mutual_contradiction.mean()) if n else None,
        "inconsistency_rate": rates,
        "counts": counts,
    }
