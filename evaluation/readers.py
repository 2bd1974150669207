"""Readers for the gold and prediction files the evaluation suites take.

Every reader returns plain Python / pandas structures and raises `InputError` naming the file, the line
(1-based, counting a CSV header as line 1) and the field that is wrong, so that the management command
can hand the message to the user as it is.
"""
import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

NLI_LABELS = ("entailment", "neutral", "contradiction")
_NLI_ALIASES = {
    "e": "entailment",
    "entailment": "entailment",
    "n": "neutral",
    "neutral": "neutral",
    "c": "contradiction",
    "contradiction": "contradiction",
}
DEFEASIBLE_LABELS = ("strengthener", "weakener", "neutral")


class InputError(ValueError):
    """A gold or prediction file that cannot be read as the suite expects."""


def where(path, line=None, field=None) -> str:
    """`path:line field 'x'` prefix for error messages."""
    text = str(path)
    if line is not None:
        text += f":{line}"
    if field is not None:
        text += f" field '{field}'"
    return text


def canonical_nli_label(value, path, line, field) -> str:
    """Canonical 3-way label ("entailment" / "neutral" / "contradiction") from a name or a letter."""
    label = _NLI_ALIASES.get(str(value).strip().lower()) if value is not None else None
    if label is None:
        raise InputError(f"{where(path, line, field)}: {value!r} is not an NLI label (e/n/c or full names)")
    return label


def defeasible_label(value, path, line, field, allow_neutral=True) -> str:
    """Canonical defeasible label: "strengthener", "weakener" and, for atoms, "neutral"."""
    allowed = DEFEASIBLE_LABELS if allow_neutral else DEFEASIBLE_LABELS[:2]
    label = str(value).strip().lower() if value is not None else None
    if label not in allowed:
        raise InputError(f"{where(path, line, field)}: {value!r} is not one of {', '.join(allowed)}")
    return label


def read_jsonl(path) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSON Lines file."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as error:
                raise InputError(f"{where(path, number)}: not valid JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise InputError(f"{where(path, number)}: expected a JSON object")
            rows.append((number, row))
    return rows


def require(row: dict, field: str, path, line):
    """row[field], or an InputError naming the missing field."""
    if field not in row or row[field] is None:
        raise InputError(f"{where(path, line, field)}: missing")
    return row[field]


def first_present(row: dict, fields: tuple[str, ...], path, line):
    """The value of the first of `fields` present in row (e.g. "id" or "uid")."""
    for field in fields:
        if row.get(field) is not None:
            return row[field]
    raise InputError(f"{where(path, line, fields[0])}: missing (also looked for {', '.join(fields[1:])})")


def _is_jsonl(path: Path) -> bool:
    with open(path, encoding="utf-8") as handle:
        for text in handle:
            if text.strip():
                return text.lstrip().startswith("{")
    return False


# U-SNLI ------------------------------------------------------------------------------------------------

def read_usnli_gold(path) -> pd.DataFrame:
    """U-SNLI CSV (`id,pre,hyp,nli,unli`) -> DataFrame with columns id (str) and unli (float)."""
    path = Path(path)
    frame = pd.read_csv(path, dtype={"id": str}, keep_default_na=False)
    for column in ("id", "unli"):
        if column not in frame.columns:
            raise InputError(f"{where(path, 1, column)}: column missing from the header")
    values = pd.to_numeric(frame["unli"], errors="coerce")
    bad = np.flatnonzero(values.isna() | (values < 0) | (values > 1))
    if bad.size:
        row = bad[0]
        raise InputError(f"{where(path, row + 2, 'unli')}: {frame['unli'].iloc[row]!r} is not a probability in [0, 1]")
    duplicated = frame["id"].duplicated()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        raise InputError(f"{where(path, row + 2, 'id')}: duplicate id {frame['id'].iloc[row]!r}")
    return pd.DataFrame({"id": frame["id"].str.strip(), "unli": values.astype(float)})


def read_scalar_predictions(path) -> dict[str, float]:
    """id -> prediction from a CSV with columns `id,prediction` or JSONL rows {"id", "prediction"}."""
    path = Path(path)
    if _is_jsonl(path):
        entries = [
            (line, str(first_present(row, ("id", "uid"), path, line)), require(row, "prediction", path, line))
            for line, row in read_jsonl(path)
        ]
    else:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            for column in ("id", "prediction"):
                if column not in (reader.fieldnames or []):
                    raise InputError(f"{where(path, 1, column)}: column missing from the header")
            entries = [(line, row["id"].strip(), row["prediction"]) for line, row in enumerate(reader, start=2)]
    predictions = {}
    for line, item_id, value in entries:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not np.isfinite(number):
            raise InputError(f"{where(path, line, 'prediction')}: {value!r} is not a number")
        if item_id in predictions:
            raise InputError(f"{where(path, line, 'id')}: duplicate id {item_id!r}")
        predictions[item_id] = number
    return predictions


# ChaosNLI ----------------------------------------------------------------------------------------------

def chaos_label_names(n_classes: int) -> tuple:
    """Label order of a ChaosNLI file: [e, n, c] for NLI, [1, 2] for alphaNLI."""
    return ("e", "n", "c") if n_classes == 3 else (1, 2)


def chaos_label(value, n_classes: int, path, line, field):
    """ChaosNLI label: "e"/"n"/"c" (from letters or names) or, for alphaNLI, the int 1 or 2."""
    if n_classes == 3:
        return canonical_nli_label(value, path, line, field)[0]
    if str(value).strip() in {"1", "2"}:
        return int(value)
    raise InputError(f"{where(path, line, field)}: {value!r} is not an alphaNLI label (1 or 2)")


def read_chaos_human(path) -> pd.DataFrame:
    """ChaosNLI JSONL -> one row per item.

    Columns: uid, label_count (list[int], label order of `chaos_label_names`), label_dist (list[float]),
    entropy (base 2, as in the file), majority_label, old_label.
    """
    path = Path(path)
    records = []
    for line, row in read_jsonl(path):
        counts = require(row, "label_count", path, line)
        if not isinstance(counts, list) or len(counts) not in (2, 3):
            raise InputError(f"{where(path, line, 'label_count')}: expected a list of 2 or 3 counts")
        n_classes = len(counts)
        records.append({
            "uid": str(require(row, "uid", path, line)),
            "label_count": [int(c) for c in counts],
            "label_dist": [float(p) for p in require(row, "label_dist", path, line)],
            "entropy": float(require(row, "entropy", path, line)),
            "majority_label": chaos_label(require(row, "majority_label", path, line), n_classes, path, line, "majority_label"),
            "old_label": chaos_label(require(row, "old_label", path, line), n_classes, path, line, "old_label"),
        })
    if not records:
        raise InputError(f"{path}: no items")
    if len({len(r["label_count"]) for r in records}) != 1:
        raise InputError(f"{path}: items mix 2-class and 3-class label counts")
    return pd.DataFrame.from_records(records)


def read_chaos_predictions(path, n_classes: int, model: str | None = None) -> dict[str, dict]:
    """uid -> {"probabilities": list[float] in the ChaosNLI label order, "label": label or None}.

    Accepts the ChaosNLI prediction format {"<model>": {"<uid>": {"uid", "predicted_probabilities",
    "predicted_label"}}} (pick the model with `model` when the file holds several) and JSON Lines rows
    {"id" or "uid", "probabilities": {"entailment": p, ...}, "label"} (alphaNLI keys "1" and "2").
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        document = None  # several JSON objects: JSON Lines
    if not isinstance(document, dict) or "probabilities" in document:
        return _read_chaos_prediction_rows(path, n_classes)
    if not document:
        raise InputError(f"{path}: expected {{model name: {{uid: prediction}}}}")
    if model is None:
        if len(document) > 1:
            raise InputError(f"{path}: holds several models ({', '.join(document)}); choose one with --model")
        model = next(iter(document))
    if model not in document:
        raise InputError(f"{path}: no model named {model!r} (found {', '.join(document)})")
    predictions = {}
    for uid, entry in document[model].items():
        place = f"{model}/{uid}"
        probabilities = entry.get("predicted_probabilities") if isinstance(entry, dict) else None
        if not isinstance(probabilities, list) or len(probabilities) != n_classes:
            raise InputError(f"{where(path, None, 'predicted_probabilities')} of {place}: expected {n_classes} numbers")
        label = entry.get("predicted_label")
        predictions[str(uid)] = {
            "probabilities": [float(p) for p in probabilities],
            "label": None if label is None else chaos_label(label, n_classes, path, None, f"predicted_label of {place}"),
        }
    return predictions


def _read_chaos_prediction_rows(path: Path, n_classes: int) -> dict[str, dict]:
    names = chaos_label_names(n_classes)
    predictions = {}
    for line, row in read_jsonl(path):
        uid = str(first_present(row, ("id", "uid"), path, line))
        given = require(row, "probabilities", path, line)
        if not isinstance(given, dict):
            raise InputError(f"{where(path, line, 'probabilities')}: expected {{label: probability}}")
        probabilities = dict.fromkeys(names, 0.0)
        for key, value in given.items():
            probabilities[chaos_label(key, n_classes, path, line, "probabilities")] = float(value)
        label = row.get("label")
        if uid in predictions:
            raise InputError(f"{where(path, line, 'id')}: duplicate id {uid!r}")
        predictions[uid] = {
            "probabilities": [probabilities[name] for name in names],
            "label": None if label is None else chaos_label(label, n_classes, path, line, "label"),
        }
    return predictions


# Atomic NLI --------------------------------------------------------------------------------------------

def read_nli_atoms(path) -> tuple[pd.DataFrame, list[list[str]]]:
    """Atomic NLI JSONL (format in docs/metrics.md) -> (examples, atom labels).

    examples: columns id, gold_label, predicted_label (canonical NLI labels); atom labels: per example, the
    model's (P, atom) labels of the atoms it judges entailed by H.
    """
    path = Path(path)
    records, atom_labels = [], []
    for line, row in read_jsonl(path):
        records.append({
            "id": str(first_present(row, ("id", "uid"), path, line)),
            "gold_label": canonical_nli_label(require(row, "gold_label", path, line), path, line, "gold_label"),
            "predicted_label": canonical_nli_label(require(row, "predicted_label", path, line), path, line, "predicted_label"),
        })
        atoms = require(row, "atoms", path, line)
        if not isinstance(atoms, list):
            raise InputError(f"{where(path, line, 'atoms')}: expected a list")
        labels = []
        for number, atom in enumerate(atoms):
            field = f"atoms[{number}]"
            entailed = atom.get("entailed_by_hypothesis") if isinstance(atom, dict) else None
            if not isinstance(entailed, bool):
                raise InputError(f"{where(path, line, field + '.entailed_by_hypothesis')}: expected true or false")
            if entailed:
                value = atom.get("predicted_label")
                labels.append(canonical_nli_label(value, path, line, field + ".predicted_label"))
        atom_labels.append(labels)
    return pd.DataFrame.from_records(records, columns=["id", "gold_label", "predicted_label"]), atom_labels


# Defeasible NLI with atoms -----------------------------------------------------------------------------

def read_defeasible(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Defeasible atoms JSONL (format in docs/metrics.md) -> (examples, atoms), the tables that
    `evaluation.metrics.defeasible` documents. An atom without `bucket` is its own bucket, named by its text."""
    path = Path(path)
    examples, atoms = [], []
    for line, row in read_jsonl(path):
        index = len(examples)
        examples.append({
            "id": str(first_present(row, ("id", "uid"), path, line)),
            "gold_label": defeasible_label(require(row, "gold_label", path, line), path, line, "gold_label", False),
            "predicted_label": defeasible_label(
                require(row, "predicted_label", path, line), path, line, "predicted_label", False
            ),
        })
        given = require(row, "atoms", path, line)
        if not isinstance(given, list):
            raise InputError(f"{where(path, line, 'atoms')}: expected a list")
        for number, atom in enumerate(given):
            field = f"atoms[{number}]"
            text = atom.get("text") if isinstance(atom, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"{where(path, line, field + '.text')}: expected the atom's text")
            gold = atom.get("gold")
            if isinstance(gold, bool) or not isinstance(gold, int) or not -2 <= gold <= 2:
                raise InputError(f"{where(path, line, field + '.gold')}: {gold!r} is not an integer in -2..2")
            valid = atom.get("valid")
            if not isinstance(valid, bool):
                raise InputError(f"{where(path, line, field + '.valid')}: expected true or false")
            predicted = atom.get("predicted_label")
            if valid or predicted is not None:
                predicted = defeasible_label(predicted, path, line, field + ".predicted_label")
            bucket = atom.get("bucket", text)
            buckets = tuple(str(b) for b in bucket) if isinstance(bucket, list) else (str(bucket),)
            atoms.append({"example": index, "text": text, "gold": gold, "valid": valid, "predicted": predicted,
                          "buckets": buckets})
    return (
        pd.DataFrame.from_records(examples, columns=["id", "gold_label", "predicted_label"]),
        pd.DataFrame.from_records(atoms, columns=["example", "text", "gold", "valid", "predicted", "buckets"]),
    )


# Transitivity ------------------------------------------------------------------------------------------

TRANSITIVITY_FIELDS = ("label_p_h", "label_h_m", "label_m_h", "label_p_m")


def read_transitivity(path) -> pd.DataFrame:
    """Transitivity JSONL -> DataFrame with id and the four label columns as "E" / "N" / "C"."""
    path = Path(path)
    records = []
    for line, row in read_jsonl(path):
        record = {"id": str(first_present(row, ("id", "uid"), path, line))}
        for field in TRANSITIVITY_FIELDS:
            record[field] = canonical_nli_label(require(row, field, path, line), path, line, field)[0].upper()
        records.append(record)
    return pd.DataFrame.from_records(records, columns=["id", *TRANSITIVITY_FIELDS])


# Epistemic closure -------------------------------------------------------------------------------------

def read_snli_pairs(path) -> list[dict]:
    """SNLI JSONL rows {"premise", "hypothesis", "label"} with canonical labels; rows whose label is not
    an NLI label (SNLI's "-" for no gold label) are skipped."""
    path = Path(path)
    pairs = []
    for line, row in read_jsonl(path):
        label = _NLI_ALIASES.get(str(row.get("label", row.get("gold_label", ""))).strip().lower())
        if label is not None:
            pairs.append({"premise": require(row, "premise", path, line),
                          "hypothesis": require(row, "hypothesis", path, line), "label": label})
    return pairs


def read_epistemic_rows(path) -> pd.DataFrame:
    """Generated epistemic rows -> DataFrame with index (0-based position in the file), id, template,
    label and original_label."""
    path = Path(path)
    records = []
    for index, (line, row) in enumerate(read_jsonl(path)):
        records.append({
            "index": index,
            "id": str(row["id"]) if row.get("id") is not None else None,
            "template": str(require(row, "template", path, line)),
            "label": canonical_nli_label(require(row, "label", path, line), path, line, "label"),
            "original_label": canonical_nli_label(require(row, "original_label", path, line), path, line, "original_label"),
        })
    return pd.DataFrame.from_records(records, columns=["index", "id", "template", "label", "original_label"])


def read_label_predictions(path) -> dict:
    """Prediction JSONL rows {"id" or "index", "label"} -> {id (str) or index (int): canonical label}."""
    path = Path(path)
    predictions = {}
    for line, row in read_jsonl(path):
        if row.get("id") is not None:
            key = str(row["id"])
        elif isinstance(row.get("index"), int):
            key = row["index"]
        else:
            raise InputError(f"{where(path, line, 'id')}: missing (or give an integer 'index')")
        if key in predictions:
            raise InputError(f"{where(path, line, 'id')}: duplicate {key!r}")
        predictions[key] = canonical_nli_label(require(row, "label", path, line), path, line, "label")
    return predictions
