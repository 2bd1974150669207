"""Readers for the gold and prediction files the evaluation suites take, and the checks of their values.

Files are read with `common.readers` (one JSON Lines and one CSV reader); every value a suite uses is
checked here, once, whichever suite, command, page or API call reads it: probabilities are numbers in
[0, 1], distributions sum to 1 (or are rescaled on request, counted), `label_dist` has one entry per label
and matches `label_count`, labels are known, ids are unique, files are not empty. A reader stops at the
first problem and raises `RowError` naming the file, the line (physical, 1-based, a CSV header is line 1)
and the field, so the command can show the message as it is.

A source is a path or an uploaded file (anything with `.chunks()`, read from its start and left open).
"""

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd

from common.readers import RowError, csv_rows, json_lines
from common.vocabulary import NLI, LabelError, long_name, to_label
from metrics.checks import (
    PROBABILITY_TOLERANCE,
    distribution_problem,
    probability_problem,
)

# The name runs.py and the evaluate command catch: evaluation's input errors are the shared row error.
InputError = RowError

NLI_LABELS = tuple(long_name(label) for label in NLI.labels)
DEFEASIBLE_LABELS = ("strengthener", "weakener", "neutral")


def _show(value) -> str:
    """A value for an error message: its repr, cut so that the message stays one short line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def source_name(source) -> str:
    """The name errors show for a path or an uploaded file."""
    return source.name if hasattr(source, "chunks") else str(source)


@contextmanager
def _opened(source):
    """(binary file, its name for errors) for a path or an uploaded file."""
    if hasattr(source, "chunks"):
        source.seek(0)
        yield source.file, source_name(source)
        return
    with open(source, "rb") as handle:
        yield handle, source_name(source)


def _stop_at_first_error(records: Iterator, name) -> Iterator[tuple[int, dict]]:
    """The records of a common reader, raising its first RowError; a RowError too when there is none."""
    empty = True
    for line, record in records:
        if isinstance(record, RowError):
            raise record
        empty = False
        yield line, record
    if empty:
        raise RowError(None, "the file holds no rows", file=name)


def jsonl_records(source) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSON Lines file (at least one)."""
    with _opened(source) as (handle, name):
        yield from _stop_at_first_error(json_lines(handle, name), name)


def csv_records(source, required: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    """(line number, {column: text}) for every record of a CSV file with the `required` columns (at least one)."""
    with _opened(source) as (handle, name):
        yield from _stop_at_first_error(csv_rows(handle, required, name), name)


def _starts_with_json_object(source) -> bool:
    with _opened(source) as (handle, _):
        for line in handle:
            if line.strip():
                return line.lstrip().removeprefix(b"\xef\xbb\xbf").startswith(b"{")
    return False


# Values ------------------------------------------------------------------------------------------------


def require(row: dict, field: str, file, line):
    """row[field], or a RowError naming the missing field."""
    if field not in row or row[field] is None:
        raise RowError(field, "missing", file=file, line=line)
    return row[field]


def first_present(row: dict, fields: tuple[str, ...], file, line):
    """The value of the first of `fields` present in row (e.g. "id" or "uid")."""
    for field in fields:
        if row.get(field) is not None:
            return row[field]
    raise RowError(fields[0], f"missing (also looked for {', '.join(fields[1:])})", file=file, line=line)


def number(value, file, line, field) -> float:
    """A JSON number as a float; strings, booleans and null are refused (the readers refuse NaN and Infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RowError(field, f"{_show(value)} is not a number", file=file, line=line)
    return float(value)


def csv_number(text: str, file, line, field) -> float:
    """A CSV cell as a finite float."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        raise RowError(field, f"{_show(text)} is not a number", file=file, line=line)
    return value


def probability(value: float, file, line, field) -> float:
    """`value` if it lies in [0, 1]."""
    if 0 <= value <= 1:  # the common case, without an array per value (NaN fails it)
        return value
    problem = probability_problem([value])
    if problem is not None:
        raise RowError(field, problem[1], file=file, line=line)
    return value


def whole_number(value, file, line, field) -> int:
    """A non-negative JSON integer (a vote count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RowError(field, f"{_show(value)} is not a whole number of votes", file=file, line=line)
    return value


def model_distribution(values: list[float], file, line, field, renormalise: bool) -> tuple[list[float], bool]:
    """A model's probabilities (numbers in [0, 1]) if they sum to 1 within PROBABILITY_TOLERANCE, and whether
    they were rescaled to do so: only with `renormalise`, and never a row of zeros."""
    if abs(sum(values) - 1) <= PROBABILITY_TOLERANCE:  # the common case, without an array per row
        return values, False
    problem = distribution_problem([values])
    if problem is None:
        return values, False
    total = sum(values)
    if total == 0:
        raise RowError(field, "every probability is 0, which is no distribution", file=file, line=line)
    if renormalise:
        return [value / total for value in values], True
    raise RowError(field, f"probabilities {problem[1]} (--renormalise rescales such rows)", file=file, line=line)


def canonical_nli_label(value, file, line, field) -> str:
    """The 3-way label's long name ("entailment" / "neutral" / "contradiction") from any spelling the
    vocabulary knows (letters, names, any case)."""
    try:
        return _nli_long_name(value) if isinstance(value, str) else long_name(to_label(value, NLI.labels))
    except LabelError:
        raise RowError(
            field, f"{_show(value)} is not an NLI label (e/n/c or full names)", file=file, line=line
        ) from None


@functools.lru_cache(maxsize=256)  # a file spells its labels a few ways, on every row
def _nli_long_name(value: str) -> str:
    return long_name(to_label(value, NLI.labels))


def defeasible_label(value, file, line, field, allow_neutral=True) -> str:
    """Canonical defeasible label: "strengthener", "weakener" and, for atoms, "neutral"."""
    allowed = DEFEASIBLE_LABELS if allow_neutral else DEFEASIBLE_LABELS[:2]
    label = str(value).strip().lower() if value is not None else None
    if label not in allowed:
        raise RowError(field, f"{_show(value)} is not one of {', '.join(allowed)}", file=file, line=line)
    return label


def _unique(seen: dict, key, file, line, field) -> None:
    if key in seen:
        raise RowError(field, f"repeats {_show(key)} of line {seen[key]}", file=file, line=line)
    seen[key] = line


# U-SNLI ------------------------------------------------------------------------------------------------


def read_usnli_gold(source) -> pd.DataFrame:
    """U-SNLI CSV (`id,pre,hyp,nli,unli`) -> DataFrame with columns id (str), unli (float in [0, 1]) and
    line (the record's line, for messages)."""
    name, records, seen = source_name(source), [], {}
    for line, row in csv_records(source, ("id", "unli")):
        item_id = (row["id"] or "").strip()
        if not item_id:
            raise RowError("id", "missing", file=name, line=line)
        _unique(seen, item_id, name, line, "id")
        unli = probability(csv_number(row["unli"], name, line, "unli"), name, line, "unli")
        records.append({"id": item_id, "unli": unli, "line": line})
    return pd.DataFrame.from_records(records, columns=["id", "unli", "line"])


def read_scalar_predictions(source) -> dict[str, float]:
    """id -> probability from a CSV with columns `id,prediction` or JSONL rows {"id", "prediction"}."""
    name, predictions, seen = source_name(source), {}, {}
    if _starts_with_json_object(source):
        for line, row in jsonl_records(source):
            item_id = str(first_present(row, ("id", "uid"), name, line))
            value = number(require(row, "prediction", name, line), name, line, "prediction")
            _unique(seen, item_id, name, line, "id")
            predictions[item_id] = probability(value, name, line, "prediction")
    else:
        for line, row in csv_records(source, ("id", "prediction")):
            item_id = (row["id"] or "").strip()
            value = csv_number(row["prediction"], name, line, "prediction")
            _unique(seen, item_id, name, line, "id")
            predictions[item_id] = probability(value, name, line, "prediction")
    return predictions


# ChaosNLI ----------------------------------------------------------------------------------------------


def chaos_label_names(n_classes: int) -> tuple:
    """Label order of a ChaosNLI file: [e, n, c] for NLI, [1, 2] for alphaNLI."""
    return ("e", "n", "c") if n_classes == 3 else (1, 2)


def chaos_label(value, n_classes: int, file, line, field):
    """ChaosNLI label: "e"/"n"/"c" (from letters or names) or, for alphaNLI, the int 1 or 2."""
    if n_classes == 3:
        return canonical_nli_label(value, file, line, field)[0]
    if str(value).strip() in {"1", "2"}:
        return int(value)
    raise RowError(field, f"{_show(value)} is not an alphaNLI label (1 or 2)", file=file, line=line)


def _probability_list(value, length: int, file, line, field) -> list[float]:
    """A JSON list of `length` probabilities (one per label), each a number in [0, 1]."""
    if not isinstance(value, list) or len(value) != length:
        got = f"{len(value)} values" if isinstance(value, list) else _show(value)
        raise RowError(field, f"expected a list of {length} values (one per label), got {got}", file=file, line=line)
    return [
        probability(number(item, file, line, f"{field}[{index}]"), file, line, f"{field}[{index}]")
        for index, item in enumerate(value)
    ]


def read_chaos_human(source) -> pd.DataFrame:
    """ChaosNLI JSONL -> one row per item.

    Columns: uid, label_count (list[int], label order of `chaos_label_names`), label_dist (list[float],
    checked against label_count), entropy (base 2, as in the file), majority_label, old_label, line.
    Every item has the same number of labels (2 or 3, from the first item) and at least one vote.
    """
    name, records, seen, n_classes = source_name(source), [], {}, None
    for line, row in jsonl_records(source):
        uid = str(require(row, "uid", name, line))
        _unique(seen, uid, name, line, "uid")
        given = require(row, "label_count", name, line)
        if n_classes is None and isinstance(given, list) and len(given) in (2, 3):
            n_classes = len(given)  # the first item sets the label count of the file
        if n_classes is None or not isinstance(given, list) or len(given) != n_classes:
            wanted = "2 or 3" if n_classes is None else n_classes
            raise RowError(
                "label_count",
                f"expected a list of {wanted} counts (one per label), got {_show(given)}",
                file=name,
                line=line,
            )
        counts = [whole_number(count, name, line, f"label_count[{index}]") for index, count in enumerate(given)]
        if sum(counts) == 0:
            raise RowError("label_count", "no votes", file=name, line=line)
        dist = _probability_list(require(row, "label_dist", name, line), n_classes, name, line, "label_dist")
        expected = np.array(counts) / sum(counts)
        if np.abs(np.array(dist) - expected).max() > PROBABILITY_TOLERANCE:
            raise RowError("label_dist", f"{_show(dist)} does not match label_count {counts}", file=name, line=line)
        entropy = number(require(row, "entropy", name, line), name, line, "entropy")
        if entropy < 0:
            raise RowError("entropy", f"{_show(entropy)} is not an entropy (negative)", file=name, line=line)
        records.append(
            {
                "uid": uid,
                "label_count": counts,
                "label_dist": dist,
                "entropy": entropy,
                **{
                    field: chaos_label(require(row, field, name, line), n_classes, name, line, field)
                    for field in ("majority_label", "old_label")
                },
                "line": line,
            }
        )
    return pd.DataFrame.from_records(records)


def read_chaos_predictions(
    source, n_classes: int, model: str | None = None, renormalise: bool = False
) -> tuple[dict, int]:
    """(uid -> {"probabilities": list[float] in the ChaosNLI label order, "label": label or None}, the
    number of rows rescaled to sum to 1, which only `renormalise` allows).

    Accepts the ChaosNLI prediction format, one JSON object on one line (as the ChaosNLI scorer and our
    predict command write it): {"<model>": {"<uid>": {"uid", "predicted_probabilities", "predicted_label"}}}
    (pick the model with `model` when the file holds several); or JSON Lines rows {"id" or "uid",
    "probabilities": {"entailment": p, ...}, "label"} (alphaNLI keys "1" and "2"; a label left out has 0).
    """
    name = source_name(source)
    records = list(jsonl_records(source))
    line, document = records[0]
    if len(records) > 1 or "probabilities" in document:
        entries, seen = [], {}
        for row_line, row in records:
            entries.append(_prediction_row(row_line, row, n_classes, name))
            _unique(seen, entries[-1][0], name, row_line, "id")
    else:
        entries = _chaos_format_entries(document, line, n_classes, model, name)
    predictions, renormalised = {}, 0
    for uid, values, label, row_line, field in entries:
        values, rescaled = model_distribution(values, name, row_line, field, renormalise)
        renormalised += rescaled
        predictions[uid] = {"probabilities": values, "label": label}
    return predictions, renormalised


def _chaos_format_entries(document: dict, line: int, n_classes: int, model: str | None, name) -> list:
    """(uid, probabilities, label, line, field) per entry of a {model: {uid: prediction}} object."""
    if not document or not all(isinstance(entries, dict) for entries in document.values()):
        raise RowError(
            None, "expected {model name: {uid: prediction}} or rows with 'probabilities'", file=name, line=line
        )
    if model is None:
        if len(document) > 1:
            raise RowError(
                None, f"holds several models ({', '.join(document)}); choose one with --model", file=name, line=line
            )
        model = next(iter(document))
    if model not in document:
        raise RowError(None, f"no model named {model!r} (found {', '.join(document)})", file=name, line=line)
    entries = []
    for uid, entry in document[model].items():
        place = f"{model}.{uid}"
        if not isinstance(entry, dict):
            raise RowError(place, "expected an object with predicted_probabilities", file=name, line=line)
        field = f"{place}.predicted_probabilities"
        values = _probability_list(entry.get("predicted_probabilities"), n_classes, name, line, field)
        label = entry.get("predicted_label")
        label = None if label is None else chaos_label(label, n_classes, name, line, f"{place}.predicted_label")
        entries.append((str(uid), values, label, line, field))
    return entries


def _prediction_row(line: int, row: dict, n_classes: int, name) -> tuple:
    """(uid, probabilities, label, line, field) of a JSON Lines prediction row."""
    uid = str(first_present(row, ("id", "uid"), name, line))
    given = require(row, "probabilities", name, line)
    if not isinstance(given, dict):
        raise RowError("probabilities", "expected {label: probability}", file=name, line=line)
    by_label, names = {}, chaos_label_names(n_classes)
    for key, value in given.items():
        field = f"probabilities.{key}"
        label = chaos_label(key, n_classes, name, line, field)
        if label in by_label:
            raise RowError(field, f"gives label {label!r} a second time", file=name, line=line)
        by_label[label] = probability(number(value, name, line, field), name, line, field)
    label = row.get("label")
    label = None if label is None else chaos_label(label, n_classes, name, line, "label")
    return uid, [by_label.get(label_name, 0.0) for label_name in names], label, line, "probabilities"


# Atomic NLI --------------------------------------------------------------------------------------------


def read_nli_atoms(source) -> tuple[pd.DataFrame, list[list[str]]]:
    """Atomic NLI JSONL (format in docs/metrics.md) -> (examples, atom labels).

    examples: columns id, gold_label, predicted_label (canonical NLI labels); atom labels: per example, the
    model's (P, atom) labels of the atoms it judges entailed by H.
    """
    name, records, atom_labels = source_name(source), [], []
    for line, row in jsonl_records(source):
        records.append(
            {
                "id": str(first_present(row, ("id", "uid"), name, line)),
                "gold_label": canonical_nli_label(require(row, "gold_label", name, line), name, line, "gold_label"),
                "predicted_label": canonical_nli_label(
                    require(row, "predicted_label", name, line), name, line, "predicted_label"
                ),
            }
        )
        atoms = require(row, "atoms", name, line)
        if not isinstance(atoms, list):
            raise RowError("atoms", "expected a list", file=name, line=line)
        labels = []
        for position, atom in enumerate(atoms):
            field = f"atoms[{position}]"
            entailed = atom.get("entailed_by_hypothesis") if isinstance(atom, dict) else None
            if not isinstance(entailed, bool):
                raise RowError(field + ".entailed_by_hypothesis", "expected true or false", file=name, line=line)
            if entailed:
                labels.append(canonical_nli_label(atom.get("predicted_label"), name, line, field + ".predicted_label"))
        atom_labels.append(labels)
    if not any(atom_labels):  # logical consistency is asked of examples with such atoms only
        message = "no record has an atom entailed by the hypothesis: logical consistency needs at least one"
        raise RowError("atoms", message, file=name, line=line)
    return pd.DataFrame.from_records(records, columns=["id", "gold_label", "predicted_label"]), atom_labels


# Defeasible NLI with atoms -----------------------------------------------------------------------------


def read_defeasible(source) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Defeasible atoms JSONL (format in docs/metrics.md) -> (examples, atoms), the tables that
    `metrics.defeasible` documents. An atom without `bucket` is its own bucket, named by its text."""
    name, examples, atoms = source_name(source), [], []
    for line, row in jsonl_records(source):
        index = len(examples)
        examples.append(
            {
                "id": str(first_present(row, ("id", "uid"), name, line)),
                "gold_label": defeasible_label(require(row, "gold_label", name, line), name, line, "gold_label", False),
                "predicted_label": defeasible_label(
                    require(row, "predicted_label", name, line), name, line, "predicted_label", False
                ),
            }
        )
        given = require(row, "atoms", name, line)
        if not isinstance(given, list):
            raise RowError("atoms", "expected a list", file=name, line=line)
        for position, atom in enumerate(given):
            field = f"atoms[{position}]"
            text = atom.get("text") if isinstance(atom, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise RowError(field + ".text", "expected the atom's text", file=name, line=line)
            gold = atom.get("gold")
            if isinstance(gold, bool) or not isinstance(gold, int) or not -2 <= gold <= 2:
                raise RowError(field + ".gold", f"{_show(gold)} is not an integer in -2..2", file=name, line=line)
            valid = atom.get("valid")
            if not isinstance(valid, bool):
                raise RowError(field + ".valid", "expected true or false", file=name, line=line)
            predicted = atom.get("predicted_label")
            if valid or predicted is not None:
                predicted = defeasible_label(predicted, name, line, field + ".predicted_label")
            bucket = atom.get("bucket", text)
            buckets = tuple(str(b) for b in bucket) if isinstance(bucket, list) else (str(bucket),)
            atoms.append(
                {
                    "example": index,
                    "text": text,
                    "gold": gold,
                    "valid": valid,
                    "predicted": predicted,
                    "buckets": buckets,
                }
            )
    if not any(atom["valid"] for atom in atoms):  # the atom and critical-atom accuracies score valid atoms
        raise RowError("atoms", "no record has a valid atom: the atom metrics need at least one", file=name, line=line)
    return (
        pd.DataFrame.from_records(examples, columns=["id", "gold_label", "predicted_label"]),
        pd.DataFrame.from_records(atoms, columns=["example", "text", "gold", "valid", "predicted", "buckets"]),
    )


# Transitivity ------------------------------------------------------------------------------------------

TRANSITIVITY_FIELDS = ("label_p_h", "label_h_m", "label_m_h", "label_p_m")


def read_transitivity(source) -> pd.DataFrame:
    """Transitivity JSONL -> DataFrame with id and the four label columns as "E" / "N" / "C"."""
    name, records = source_name(source), []
    for line, row in jsonl_records(source):
        record = {"id": str(first_present(row, ("id", "uid"), name, line))}
        for field in TRANSITIVITY_FIELDS:
            record[field] = canonical_nli_label(require(row, field, name, line), name, line, field)[0].upper()
        records.append(record)
    return pd.DataFrame.from_records(records, columns=["id", *TRANSITIVITY_FIELDS])


# Epistemic closure -------------------------------------------------------------------------------------


def read_snli_pairs(source) -> list[dict]:
    """SNLI JSONL rows {"premise", "hypothesis", "label"} with canonical labels; rows whose label is not
    an NLI label (SNLI's "-" for no gold label) are skipped."""
    name, pairs = source_name(source), []
    for line, row in jsonl_records(source):
        try:
            label = long_name(to_label(row.get("label", row.get("gold_label", "")), NLI.labels))
        except LabelError:
            label = None  # SNLI's "-" (no majority) and anything else that is no 3-way label
        if label is not None:
            pairs.append(
                {
                    "premise": require(row, "premise", name, line),
                    "hypothesis": require(row, "hypothesis", name, line),
                    "label": label,
                }
            )
    return pairs


def read_epistemic_rows(source) -> pd.DataFrame:
    """Generated epistemic rows -> DataFrame with index (0-based position in the file), id, template,
    label, original_label and line."""
    name, records = source_name(source), []
    for index, (line, row) in enumerate(jsonl_records(source)):
        records.append(
            {
                "index": index,
                "id": str(row["id"]) if row.get("id") is not None else None,
                "template": str(require(row, "template", name, line)),
                "label": canonical_nli_label(require(row, "label", name, line), name, line, "label"),
                "original_label": canonical_nli_label(
                    require(row, "original_label", name, line), name, line, "original_label"
                ),
                "line": line,
            }
        )
    return pd.DataFrame.from_records(records, columns=["index", "id", "template", "label", "original_label", "line"])


def read_label_predictions(source) -> dict:
    """Prediction JSONL rows {"id" or "index", "label"} -> {id (str) or index (int): canonical label}."""
    name, predictions, seen = source_name(source), {}, {}
    for line, row in jsonl_records(source):
        if row.get("id") is not None:
            key, field = str(row["id"]), "id"
        elif isinstance(row.get("index"), int) and not isinstance(row["index"], bool):
            key, field = row["index"], "index"
        else:
            raise RowError("id", "missing (or give an integer 'index')", file=name, line=line)
        _unique(seen, key, name, line, field)
        predictions[key] = canonical_nli_label(require(row, "label", name, line), name, line, "label")
    return predictions


# Per-annotator labels (alt-test) ---------------------------------------------------------------------


def read_annotator_labels(source) -> tuple[pd.DataFrame, int, dict[str, int]]:
    """Per-annotator NLI labels -> (DataFrame with columns id, annotator, label, line; the number of
    classes, 3 or 2; the rows left out: {"imported", "excluded", "gold_checks"} -> count).

    Rows are JSON Lines {"id" (or "uid"), "annotator", "label"}, or the app's per-annotation export as it is
    ({"id", "annotator", "value", "imported", "excluded", "pool", "atom", ...}): imported votes (they have
    no annotator), excluded answers and gold-check answers are left out and counted; per-atom answers are
    refused. Labels are 3-way NLI (e/n/c or full names) or, when the first row's label is 1 or 2, alphaNLI,
    spelled as `chaos_label` gives them. An annotator labels an item at most once.
    """
    name, records, seen, n_classes = source_name(source), [], {}, None
    skipped = {"imported": 0, "excluded": 0, "gold_checks": 0}
    for line, row in jsonl_records(source):
        skip = next((flag for flag in ("imported", "excluded") if row.get(flag) is True), None)
        if skip is None and row.get("pool") == "gold":
            skip = "gold_checks"
        if skip is not None:
            skipped[skip] += 1
            continue
        if row.get("atom") is not None:
            raise RowError("atom", "per-atom answers: the alt-test takes labels of whole items", file=name, line=line)
        item_id = str(first_present(row, ("id", "uid"), name, line))
        annotator = str(require(row, "annotator", name, line))
        field = "label" if "label" in row else "value"
        value = require(row, field, name, line)
        if n_classes is None:
            n_classes = 2 if str(value).strip() in {"1", "2"} else 3  # the first row sets the label set
        _unique(seen, (item_id, annotator), name, line, "annotator")
        label = chaos_label(value, n_classes, name, line, field)
        records.append({"id": item_id, "annotator": annotator, "label": label, "line": line})
    if n_classes is None:
        left_out = ", ".join(f"{n} {reason}" for reason, n in skipped.items() if n)
        raise RowError(None, f"every row was left out ({left_out})", file=name)
    return pd.DataFrame.from_records(records), n_classes, skipped
