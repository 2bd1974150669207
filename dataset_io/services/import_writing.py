"""Writing an import's checked rows (dataset_io.services.importers reads, import_checks checks):
examples, their items (or atoms and atom items), imported votes, gold checks and qualification items, in
batches inside one transaction, and the planner statistics refreshed afterwards."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db import connection, transaction

from annotation.models import Annotation, Atom, Example, Item, Project
from annotation.services import pools
from dataset_io.formats.base import AtomRow, ExampleRow, Skipped
from dataset_io.services.import_checks import (
    ImportFileError,
    PoolChecks,
    check_example_rows,
    options_changed_by,
)


@dataclass
class ImportReport:
    created: int = 0
    skipped: int = 0
    already_present: int = 0
    unique_hypotheses: int = 0
    items: int = 0
    atoms: int = 0
    annotations: int = 0
    skipped_reasons: dict = field(default_factory=dict)
    qualification_items: int = 0
    gold_items: int = 0
    # Why a file that was read without errors added nothing (or less than a user would expect).
    notes: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def write_examples(project: Project, rows: list[ExampleRow], skipped: list[Skipped], purpose: str) -> ImportReport:
    report = ImportReport(skipped=len(skipped), skipped_reasons=dict(Counter(s.reason for s in skipped)))
    report.unique_hypotheses = len({row.hypothesis for row in rows})
    with transaction.atomic():
        write_example_batches(project, [rows], {row.label_set for row in rows if row.imported_labels}, purpose, report)
    return report


def write_example_batches(project: Project, batches, label_sets: set, purpose: str, report: ImportReport) -> None:
    """Write examples, their items (or atoms and atom items) and imported votes batch by batch (inside the
    caller's transaction); rows whose key the project already has are counted as already present."""
    task = project.task
    existing = dict(project.examples.values_list("key", "id"))
    if not task.label_distributions:
        label_sets = set()  # votes are kept only where items collect label distributions
    changes = options_changed_by(project, next(iter(label_sets))) if label_sets else {}
    if changes:
        project.options = {**project.options, **changes}
        project.save(update_fields=["options"])
    position = project.examples.count()
    for rows in batches:
        new_rows, atom_rows = [], []
        for row in rows:
            if row.atoms:
                atom_rows.append(row)
            if row.key in existing:
                report.already_present += not row.atoms
            else:
                existing[row.key] = None  # a later line of the same example (one per atom) makes no second one
                new_rows.append(row)
        examples = Example.objects.bulk_create(
            [Example.from_source(row, project, position + offset) for offset, row in enumerate(new_rows)],
            batch_size=2000,
        )
        existing.update({example.key: example.id for example in examples})
        position += len(examples)
        report.created += len(examples)
        if not task.per_atom:
            votes = [row.imported_labels if label_sets else [] for row in new_rows]
            items = [
                _new_item(
                    project,
                    example,
                    labels=labels,
                    group=row.group,
                    gold=row.gold if (row.pool or purpose) == pools.GOLD else None,
                )
                for example, row, labels in zip(examples, new_rows, votes)
            ]
            Item.objects.bulk_create(items, batch_size=2000)
            report.items += len(items)
            report.gold_items += sum(item.is_gold for item in items)
            annotations = [
                Annotation(item=item, raw={"value": label}, value=label, imported=True, count=count)
                for item, row, labels in zip(items, new_rows, votes)
                for label, count in ([(label, 1) for label in labels] if row.ordered_votes else Counter(labels).items())
            ]
            Annotation.objects.bulk_create(annotations, batch_size=5000)
            report.annotations += sum(annotation.count for annotation in annotations)
        elif atom_rows:
            _write_row_atoms(project, atom_rows, existing, purpose, report)


def _write_row_atoms(
    project: Project, rows: list[ExampleRow], example_ids: dict[str, int], purpose: str, report: ImportReport
) -> None:
    """The atoms that lines of a per-atom study's own export carry, one item each (atoms already there are
    counted as already present)."""
    ids = {example_ids[row.key] for row in rows}
    existing = set(Atom.objects.filter(example_id__in=ids).values_list("example_id", "text"))
    atoms, pools_of = [], []
    for row in rows:
        for atom in row.atoms:
            key = (example_ids[row.key], atom["text"])
            if key in existing:
                report.already_present += 1
                continue
            existing.add(key)
            atoms.append(
                Atom(
                    example_id=key[0],
                    text=atom["text"],
                    order=atom["order"] or 0,
                    validity=atom["validity"],
                    effect=atom["effect"],
                )
            )
            pools_of.append(atom)
    Atom.objects.bulk_create(atoms, batch_size=2000)
    items = [
        _new_item(
            project,
            None,
            atom,
            gold=spec["gold"] if (spec["pool"] or purpose) == pools.GOLD else None,
            example_id=atom.example_id,
        )
        for atom, spec in zip(atoms, pools_of)
    ]
    Item.objects.bulk_create(items, batch_size=2000)
    report.atoms += len(atoms)
    report.items += len(items)
    report.gold_items += sum(item.is_gold for item in items)


def _new_item(
    project: Project,
    example: Example | None,
    atom: Atom | None = None,
    labels: list[str] = (),
    group: str = "",
    gold=None,
    example_id: int | None = None,
) -> Item:
    """A new item; `gold` (a reference answer) makes it a hidden gold check, served only as one."""
    item = Item(project=project, example=example, atom=atom, target=project.redundancy, coherence_group=group)
    if example is None:
        item.example_id = example_id
    if gold is not None:
        item.is_gold, item.gold = True, gold
        item.claimable, item.status, item.target = False, Item.Status.DONE, 0
    elif labels:  # imported votes: the item is complete as it stands
        aggregate = project.task.aggregate(list(labels), project.options)
        item.annotation_count = len(labels)
        item.target = max(project.redundancy, len(labels))
        item.claimable = False
        item.aggregate = aggregate.value
        item.status = Item.Status.ADJUDICATION if aggregate.tied else Item.Status.DONE
    return item


def write_atoms(project: Project, rows: list[AtomRow], errors: list, skipped: list, purpose: str) -> ImportReport:
    """Atoms of examples named by id or hypothesis text; a row that carries its example makes it first."""
    by_ref: dict[str, list[Example]] = {}
    by_hypothesis: dict[str, list[Example]] = {}
    for example in project.examples.all():
        by_ref.setdefault(example.source_id, []).append(example)
        by_ref.setdefault(example.key, []).append(example)
        by_hypothesis.setdefault(example.hypothesis, []).append(example)
    carried = [row.example for row in rows if row.example is not None]
    check_example_rows(project, carried, errors)
    new_examples = [example for example in carried if example.key not in by_ref]
    checks = PoolChecks(project, purpose)
    targets: list[tuple[AtomRow, list]] = []
    for row in rows:
        if row.example is not None and row.example.key not in by_ref:
            found = [row.example]
        else:
            found = by_ref.get(row.example_ref, []) if row.example_ref else by_hypothesis.get(row.hypothesis, [])
        if not found:
            name = "example_id" if row.example_ref else "hypothesis"
            errors.append((row.line, name, "matches no example of this project"))
        for example in found:
            for index, atom in enumerate(row.atoms):
                pool = checks.pool_of(atom["pool"], row.line, errors, f"atoms[{index}].nli_studio.pool")
                if project.task.per_atom:
                    checks.check_text(example, atom["text"], pool, errors, f"atoms[{index}].text")
                    checks.check_atom_gold(row.line, atom, pool, errors, index)
        targets.append((row, found))
    if errors:
        raise ImportFileError(sorted(errors, key=lambda error: error[0] or 0))
    report = ImportReport(skipped=len(skipped))
    report.unique_hypotheses = len({example.hypothesis for _, found in targets for example in found})
    with transaction.atomic():
        made = {}
        if new_examples:
            position = project.examples.count()
            created = Example.objects.bulk_create(
                [Example.from_source(row, project, position + offset) for offset, row in enumerate(new_examples)]
            )
            made = {example.key: example for example in created}
            report.notes.append(
                f"{len(created)} example{'s' if len(created) != 1 else ''} made from the lines that carry them."
            )
        existing = set(Atom.objects.filter(example__project=project).values_list("example_id", "text"))
        new_atoms, specs = [], []
        for row, found in targets:
            for example in found:
                example = made.get(example.key, example) if isinstance(example, ExampleRow) else example
                for order, atom in enumerate(row.atoms):
                    if (example.id, atom["text"]) in existing:
                        report.already_present += 1
                        continue
                    existing.add((example.id, atom["text"]))
                    new_atoms.append(
                        Atom(
                            example=example,
                            text=atom["text"],
                            validity=atom["validity"],
                            order=order if atom["order"] is None else atom["order"],
                            effect=atom["effect"],
                        )
                    )
                    specs.append(atom)
        Atom.objects.bulk_create(new_atoms, batch_size=2000)
        report.atoms = report.created = len(new_atoms)
        if project.task.per_atom:
            items = [
                _new_item(
                    project, atom.example, atom, gold=spec["gold"] if (spec["pool"] or purpose) == pools.GOLD else None
                )
                for atom, spec in zip(new_atoms, specs)
            ]
            Item.objects.bulk_create(items, batch_size=2000)
            report.items = len(items)
            report.gold_items = sum(item.is_gold for item in items)
    return report


# The tables an import fills, whose planner statistics it refreshes.
IMPORTED_TABLES = (Example, Atom, Item, Annotation)


def analyzed(report: ImportReport) -> ImportReport:
    if report.created or report.items:
        analyze_imported_tables()
    return report


def analyze_imported_tables() -> None:
    """Fresh PostgreSQL planner statistics for the tables an import fills. Without them the planner
    guesses from the empty tables it last saw: right after an import it expects one claimable item, and
    the claim query scans the worker's whole history for every item instead of reading the index.
    Only these tables: the claim and page tables of a new deployment must stay never-analysed rather than
    analysed empty, or the plans that pooled connections prepare for the first claims (seq scans of an
    "empty" claim table) are kept while the table grows, and each claim reads the worker's whole history
    until autovacuum analyses it (docs/benchmarks.md)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE " + ", ".join(connection.ops.quote_name(model._meta.db_table) for model in IMPORTED_TABLES)
        )


def write_qualification(project: Project, rows: list[ExampleRow], skipped: list[Skipped]) -> ImportReport:
    from annotation.models import QualificationItem
    from annotation.services.qualification import (
        QualificationError,
        _next_order,
        _refuse_once_taken,
        project_test,
    )

    with transaction.atomic():
        test = project_test(project)
        try:
            _refuse_once_taken(test)
        except QualificationError as error:
            raise ImportFileError([(0, "(file)", str(error))]) from None
        start = _next_order(test)
        QualificationItem.objects.bulk_create(
            [
                QualificationItem(
                    test=test,
                    premise=row.premise,
                    hypothesis=row.hypothesis,
                    update=row.update,
                    order=start + number,
                    reference=row.gold,
                )
                for number, row in enumerate(rows)
            ]
        )
    return ImportReport(skipped=len(skipped), qualification_items=len(rows))
