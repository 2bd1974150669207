"""Logical consistency between a model's label for (P, H) and its labels for (P, atom) (atomic NLI).

Labels are the strings "entailment", "neutral", "contradiction". The atoms of an example are the ones
the model itself judges entailed by H; their labels are the model's labels for (P, atom).
"""

import numpy as np

from metrics.checks import check_same_length
from metrics.classification import accuracy, share

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"


def is_consistent(full_label: str, atom_labels: list[str]) -> bool:
    """Whether the full label agrees with the atom labels.

    entailment needs every atom entailed; contradiction needs at least one contradicted atom; neutral needs
    at least one neutral atom and no contradicted one. `atom_labels` must not be empty.
    """
    if not atom_labels:
        raise ValueError("consistency is defined for examples with at least one atom")
    if full_label == ENTAILMENT:
        return all(label == ENTAILMENT for label in atom_labels)
    if full_label == CONTRADICTION:
        return CONTRADICTION in atom_labels
    if full_label == NEUTRAL:
        return NEUTRAL in atom_labels and CONTRADICTION not in atom_labels
    raise ValueError(f"unknown label {full_label!r}")


def induced_label(atom_labels: list[str]) -> str:
    """Label composed from atom labels: any contradiction -> contradiction, all entailed -> entailment,
    otherwise neutral. `atom_labels` must not be empty."""
    if not atom_labels:
        raise ValueError("an induced label needs at least one atom")
    if CONTRADICTION in atom_labels:
        return CONTRADICTION
    if all(label == ENTAILMENT for label in atom_labels):
        return ENTAILMENT
    return NEUTRAL


def logical_consistency(y_true, y_pred, atom_labels: list[list[str]]) -> dict:
    """Consistency report over n examples.

    y_true, y_pred: (n,) gold and predicted full labels; atom_labels: n lists of the model's atom labels.
    Examples without any atom have no consistency to check: they count in `accuracy` only and are
    reported as `n_without_atoms`; every other figure is over the `n_scored` examples that have atoms.
    """
    check_same_length(y_true=y_true, y_pred=y_pred, atom_labels=atom_labels)
    y_true, y_pred = np.asarray(y_true, dtype=object), np.asarray(y_pred, dtype=object)
    scored = np.array([bool(labels) for labels in atom_labels], dtype=bool)
    consistent = np.array([is_consistent(p, a) for p, a, s in zip(y_pred, atom_labels, scored) if s], dtype=bool)
    induced = np.array([induced_label(a) for a, s in zip(atom_labels, scored) if s], dtype=object)
    truth, predicted = y_true[scored], y_pred[scored]
    correct = truth == predicted
    return {
        "n": int(y_true.size),
        "n_scored": int(scored.sum()),
        "n_without_atoms": int((~scored).sum()),
        "accuracy": accuracy(y_true, y_pred),
        "accuracy_scored": share(correct),
        "consistency": share(consistent),
        "consistency_correct": share(consistent[correct]),
        "consistency_incorrect": share(consistent[~correct]),
        "consistency_by_label": {
            label: share(consistent[predicted == label]) for label in (ENTAILMENT, NEUTRAL, CONTRADICTION)
        },
        "induced_accuracy": accuracy(truth, induced),
    }
