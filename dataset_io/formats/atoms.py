"""Atoms JSON Lines: one example per line with the atoms of its hypothesis.

A line names its example by id (`example_id` or `id`), or by its hypothesis text alone (every example with
that hypothesis gets the atoms); a line that also carries the example's premise and hypothesis makes the
example when the study does not have it, so a study's own export imports into a new study unchanged."""

from __future__ import annotations

from annotation.models import Atom, Example
from common.readers import RowError
from dataset_io.formats.base import (
    POOLS,
    STUDIO_KEY,
    AtomRow,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    content_key,
    json_line,
    schema_errors,
)
from dataset_io.services.records import keyset_batches, with_votes

EXAMPLE_FIELDS = ("example_id", "id", "premise", "hypothesis", "update", "update_type", "label", "atoms", STUDIO_KEY)


class Atoms(Format):
    name = "atoms"
    title = "Atoms JSON Lines"
    extension = "jsonl"
    summary = "one example per line with its atoms"
    fields = (
        FieldDoc(
            "id",
            "text",
            "the example's id: the one it was imported with, unless other lines shared it (delta-NLI's "
            "pair ids), else the study's key for it",
        ),
        FieldDoc("premise, hypothesis, update, update_type", "text", "the example's texts, exactly as stored"),
        FieldDoc("label", "label or empty", "the example's imported label (an NLI relation or the update's type)"),
        FieldDoc("(other fields)", "any", "fields the imported example row had beyond these, unchanged"),
        FieldDoc(
            "nli_studio.key, source_id, source_format",
            "text",
            "the study's key for the example, the id it was imported with, and the format it came in",
            added=True,
        ),
        FieldDoc("atoms[].text, order", "text, whole number", "the atom and its place in the hypothesis"),
        FieldDoc("atoms[].validity", "valid, invalid or unknown", "the imported validity"),
        FieldDoc("atoms[].effect", "-2..2 or null", "the imported gold effect of the update on the atom"),
        FieldDoc(
            "atoms[].collected",
            "label or null",
            "the atom's collected label: adjudicated, else the aggregate "
            "of the answers that count; null while unsettled or tied",
        ),
        FieldDoc(
            "atoms[].nli_studio",
            "object",
            "the atom's item id, its declared aggregate (value, method, "
            "settled, tie, adjudicated, answers, excluded), and with gold checks asked for its pool and "
            "reference",
            added=True,
        ),
    )

    def importable(self, task, options):
        return task.per_atom

    def exportable(self, task, options):
        return task.per_atom

    def parse(self, line, record, context: ReadContext):
        example_ref = str(record.get("example_id") or record.get("id") or "")
        hypothesis = record.get("hypothesis") or ""
        if not isinstance(hypothesis, str):
            raise RowError("hypothesis", "must be text")
        if not example_ref and not hypothesis:
            raise RowError("example_id", "give the example's id or its hypothesis text")
        premise = record.get("premise")
        example = None
        if premise is not None:  # the line carries its example: made if the study lacks it
            if not isinstance(premise, str) or not premise.strip() or not hypothesis.strip():
                raise RowError("premise", "a line that carries its example needs its premise and hypothesis")
            update = record.get("update") or ""
            if not isinstance(update, str):
                raise RowError("update", "must be text")
            label = record.get("label")
            own = record.get(STUDIO_KEY) or {}  # a study's own export names its key for the example
            if not isinstance(own, dict):
                raise RowError(STUDIO_KEY, "must be an object (this app's fields of an exported line)")
            example = ExampleRow(
                line=line,
                key=own.get("key")
                or (f"id:{example_ref}" if example_ref else content_key(premise, hypothesis, update)),
                source_id=str(own.get("source_id", example_ref)),
                premise=premise,
                hypothesis=hypothesis,
                update=update,
                source_format=str(own.get("source_format") or ""),
                update_type=str(record.get("update_type") or ""),
                source_label=context.label(label, "label") if label not in (None, "") else "",
                source_data={k: v for k, v in record.items() if k not in EXAMPLE_FIELDS},
            )
        atoms = record.get("atoms")
        if not isinstance(atoms, list) or (not atoms and example is None):
            raise RowError("atoms", "must be a non-empty list")
        return AtomRow(
            line=line,
            example_ref=example_ref,
            hypothesis=hypothesis,
            atoms=[parse_atom(atom, f"atoms[{index}]") for index, atom in enumerate(atoms)],
            example=example,
        )

    def write(self, project, options: ExportOptions):
        task = project.task
        for batch in keyset_batches(Example.objects.filter(project=project)):
            atoms = Atom.objects.filter(example__in=batch).order_by("example_id", "order", "id")
            items = project.items.filter(example__in=batch, atom__isnull=False).select_related("example", "atom")
            if not options.include_gold:
                items = items.filter(is_gold=False)
            records = {record.item.atom_id: record for record in with_votes(list(items)).values()}
            by_example: dict[int, list[dict]] = {}
            for atom in atoms:
                record = records.get(atom.id)
                if record is None:
                    continue  # a gold atom, not asked for
                aggregate = record.aggregate(task)
                studio = {"item": record.item.id, "aggregate": aggregate}
                if options.include_gold:
                    studio.update(pool=record.pool, gold=record.item.gold)
                by_example.setdefault(atom.example_id, []).append(
                    {
                        "text": atom.text,
                        "order": atom.order,
                        "validity": atom.validity,
                        "effect": atom.effect,
                        "collected": aggregate["value"],
                        STUDIO_KEY: studio,
                    }
                )
            lines = []
            for example in batch:
                # An id the example was imported with names it; otherwise (several lines shared one) its key does.
                named = example.source_id if example.key == f"id:{example.source_id}" else example.key
                row = {
                    "id": named,
                    "premise": example.premise,
                    "hypothesis": example.hypothesis,
                    "update": example.update,
                    "update_type": example.update_type,
                    "label": example.source_label,
                }
                row.update({name: value for name, value in example.source_data.items() if name not in row})
                row["atoms"] = by_example.get(example.id, [])
                row[STUDIO_KEY] = {
                    "key": example.key,
                    "source_id": example.source_id,
                    "source_format": example.source_format,
                }
                lines.append(json_line(row))
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


def parse_atom(atom, where: str) -> dict:
    """One atom of a line: text, or {"text", "validity", "effect" (or "label"), "nli_studio": {pool, gold}}."""
    if isinstance(atom, str):
        atom = {"text": atom}
    if not isinstance(atom, dict):
        raise RowError(where, "must be text or an object with 'text'")
    text = atom.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RowError(f"{where}.text", "is missing or empty")
    validity = atom.get("validity", "unknown")
    if isinstance(validity, bool):
        validity = "valid" if validity else "invalid"
    if validity not in Atom.Validity.values:
        raise RowError(f"{where}.validity", "must be valid, invalid or unknown")
    effect = atom.get("effect", atom.get("label"))
    if effect is not None and (isinstance(effect, bool) or effect not in (-2, -1, 0, 1, 2)):
        raise RowError(f"{where}.effect", "must be a whole number from -2 to 2")
    studio = atom.get(STUDIO_KEY) or {}
    if not isinstance(studio, dict) or studio.get("pool", "data") not in POOLS:
        raise RowError(f"{where}.{STUDIO_KEY}.pool", f"must be one of {', '.join(POOLS)}")
    order = atom.get("order")
    return {
        "text": text.strip(),
        "validity": validity,
        "effect": effect,
        "pool": studio.get("pool", ""),
        "gold": studio.get("gold"),
        "order": order if isinstance(order, int) and not isinstance(order, bool) else None,
    }


ATOM = {
    "type": ["object", "string"],
    "required": ["text"],
    "properties": {
        "text": {"type": "string", "minLength": 1},
        "order": {"type": "integer", "minimum": 0},
        "validity": {"enum": list(Atom.Validity.values)},
        "effect": {"enum": [-2, -1, 0, 1, 2, None]},
        STUDIO_KEY: {"type": "object", "properties": {"pool": {"enum": list(POOLS)}}},
    },
}
SCHEMA = {
    "type": "object",
    "required": ["atoms"],
    "properties": {
        "id": {"type": "string"},
        "example_id": {"type": "string"},
        "premise": {"type": "string", "minLength": 1},
        "hypothesis": {"type": "string"},
        "update": {"type": "string"},
        "label": {"type": "string"},
        "atoms": {"type": "array", "items": ATOM},
    },
}


def _check_record(line, record):
    errors = list(schema_errors(SCHEMA, record))
    yield from errors
    if errors:
        return
    if not (record.get("id") or record.get("example_id") or record.get("hypothesis")):
        yield RowError("id", "give the example's id or its hypothesis text")
    if not record["atoms"] and "premise" not in record:
        yield RowError("atoms", "must not be empty on a line that does not carry its example")


FORMAT = Atoms()
