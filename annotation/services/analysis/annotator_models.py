"""Labels aggregated with annotator models (metrics.annotator_models) for a project of a nominal task type,
for the `annotator_models` command, the API and the report page.

Which answers enter: every worker answer that is not excluded (a blocked worker's answers left out stay
out), gold checks included: they are answers like any other, and their references then score each method.
Imported votes (ChaosNLI's counts) do not enter: they carry no worker ids, and every model here estimates
each worker's reliability from who answered what. They are counted in `n_imported_votes` and said so.
"""

from __future__ import annotations

from array import array

from django.contrib.auth import get_user_model
from django.db.models import Sum

from annotation.models import Annotation, Project

STREAM_CHUNK = 10_000

# MACE and GLAD (crowd-kit) take about 5 s on 1,000 answers (2 cores); past this many the report page and
# the API fit only the fast methods and point to the command for them.
INTERACTIVE_ANSWERS = 1000

NO_REFERENCE = {
    "gold_checks": "Accuracy against gold checks: no gold check has been answered.",
    "adjudicated": "Accuracy against adjudications: no answered item has been adjudicated.",
}


def project_annotator_models(project: Project, seed: int = 0, max_answers: int | None = None) -> dict:
    """Per-item labels of every method, per-worker reliability and each method's accuracy on gold.

    Returns a JSON-ready dict:
        project, task_type, methods (the names fitted, in metrics.annotator_models.METHODS order: the fast
            ones alone past max_answers, MACE and GLAD then said unavailable), seed;
        n_items, n_workers, n_answers: what entered the models; n_imported_votes: imported votes left out;
        reliability_meaning: {method: what its worker figure is};
        workers: [{"worker_id", "worker" (username), "answers", "<method>": figure, ...}] by username;
        items: [{"item_id", "example_id", "is_gold", "<method>": label or None (a majority-vote tie)}];
        gold: {"gold_checks" | "adjudicated": {"items": n, "accuracy": {method: share}}}: each method's
            labels against gold-check references and against authors' adjudications (a tie counts 1/k);
        unavailable: {what: reason}: "annotator_models" when no model was fitted (then workers, items and
            gold are empty), "imported_votes" when some were left out, "gold_<kind>" for a reference missing.
    """
    from metrics.annotator_models import FAST_METHODS, METHODS, RELIABILITY

    result = {
        "project": project.slug,
        "task_type": project.task_type,
        "methods": list(METHODS),
        "seed": seed,
        "n_items": 0,
        "n_workers": 0,
        "n_answers": 0,
        "n_imported_votes": _imported_votes(project),
        "reliability_meaning": RELIABILITY,
        "workers": [],
        "items": [],
        "gold": {},
        "unavailable": {},
    }
    if result["n_imported_votes"]:
        result["unavailable"]["imported_votes"] = (
            f"{result['n_imported_votes']} imported votes carry no worker ids and are left out: annotator models "
            "estimate each worker's reliability"
        )
    if project.task.agreement_level != "nominal":
        result["unavailable"]["annotator_models"] = "they apply to nominal labels; this task type's are not"
        return result
    categories = project.task.categories(project.options)
    answers = _answer_arrays(project, categories)
    result["n_answers"] = len(answers[0])
    if max_answers is not None and result["n_answers"] > max_answers:
        result["methods"] = list(FAST_METHODS)
        result["unavailable"]["slow_models"] = (
            f"MACE and GLAD: {result['n_answers']} answers are more than this page fits them to ({max_answers}); "
            f"`manage.py annotator_models {project.slug}` computes them"
        )
    return _fit(project, categories, answers, seed, result)


def _imported_votes(project: Project) -> int:
    imported = Annotation.objects.counted().filter(item__project=project, worker=None)
    return imported.aggregate(votes=Sum("count"))["votes"] or 0


def _answer_arrays(project: Project, categories: list) -> tuple:
    """(item ids, worker ids, category codes) of every answer that enters, in item and answer order, as int64
    arrays (8 bytes an answer, not a tuple each: an export of a million answers reads them all)."""
    import numpy as np

    code = {category: index for index, category in enumerate(categories)}
    stream = (
        Annotation.objects.filter(item__project=project, excluded=False, worker__isnull=False)
        .order_by("item_id", "id")
        .values_list("item_id", "worker_id", "value")
        .iterator(chunk_size=STREAM_CHUNK)
    )
    columns: tuple[array, array, array] = (array("q"), array("q"), array("q"))
    for item_id, worker_id, value in stream:
        if value not in code:
            raise ValueError(f"project {project.slug}: item {item_id}: answer {value!r} is not one of {categories}")
        columns[0].append(item_id)
        columns[1].append(worker_id)
        columns[2].append(code[value])
    return tuple(np.frombuffer(column, dtype=np.int64) for column in columns)


def worker_reliability(project: Project) -> dict[int, dict[str, float]]:
    """worker id -> {method: reliability} by the fast models (Wawa, Dawid-Skene) for the exports: every
    worker of a nominal study whose answers enter; {} for other task types or where no model can be fitted
    (fewer than two workers, no item with two answers)."""
    from metrics.annotator_models import FAST_METHODS, fit_annotator_models

    if project.task.agreement_level != "nominal":
        return {}
    categories = project.task.categories(project.options)
    item_ids, worker_ids, codes = _answer_arrays(project, categories)
    item_index, item_keys = _factorized(item_ids)
    worker_index, worker_keys = _factorized(worker_ids)
    try:
        models = fit_annotator_models(
            item_index, worker_index, codes, len(item_keys), len(worker_keys), len(categories), methods=FAST_METHODS
        )
    except ValueError:
        return {}
    return {
        int(worker_id): {method: float(figures[position]) for method, figures in models.reliability.items()}
        for position, worker_id in enumerate(worker_keys)
    }


def _factorized(ids):
    """(each id's position among the sorted distinct ids, those ids)."""
    import numpy as np

    keys, index = np.unique(ids, return_inverse=True)
    return index, keys


def _fit(project: Project, categories: list, answers: tuple, seed: int, result: dict) -> dict:
    import numpy as np

    from metrics.annotator_models import expected_accuracy, fit_annotator_models

    methods = result["methods"]
    item_ids, worker_ids, codes = answers
    item_index, item_keys = _factorized(item_ids)
    worker_index, worker_keys = _factorized(worker_ids)
    result["n_items"], result["n_workers"] = len(item_keys), len(worker_keys)
    try:
        models = fit_annotator_models(
            item_index,
            worker_index,
            codes,
            len(item_keys),
            len(worker_keys),
            len(categories),
            seed=seed,
            methods=tuple(methods),
        )
    except ValueError as error:
        result["unavailable"]["annotator_models"] = str(error)
        return result

    item_facts = {
        pk: (example_id, is_gold, gold, adjudicated)
        for pk, example_id, is_gold, gold, adjudicated in project.items.filter(pk__in=item_keys.tolist())
        .order_by()
        .values_list("pk", "example_id", "is_gold", "gold", "adjudicated")
        .iterator(chunk_size=STREAM_CHUNK)
    }
    result["conventions"] = models.conventions
    labels = {method: models.labels(method) for method in methods}
    for position, item_id in enumerate(item_keys.tolist()):
        example_id, is_gold, _, _ = item_facts[item_id]
        entry = {"item_id": item_id, "example_id": example_id, "is_gold": is_gold}
        for method in methods:
            code = int(labels[method][position])
            entry[method] = categories[code] if code >= 0 else None
        result["items"].append(entry)

    names = dict(get_user_model().objects.filter(pk__in=worker_keys.tolist()).values_list("pk", "username"))
    answers = np.bincount(worker_index, minlength=len(worker_keys))
    for position, worker_id in enumerate(worker_keys.tolist()):
        entry = {
            "worker_id": worker_id,
            "worker": names.get(worker_id, f"#{worker_id}"),
            "answers": int(answers[position]),
        }
        for method, figures in models.reliability.items():
            entry[method] = float(figures[position])
        result["workers"].append(entry)
    result["workers"].sort(key=lambda entry: entry["worker"])

    code = {category: index for index, category in enumerate(categories)}
    references = {
        "gold_checks": [(position, facts[2]) for position, facts in _with_positions(item_keys, item_facts) if facts[1]],
        "adjudicated": [
            (position, facts[3]) for position, facts in _with_positions(item_keys, item_facts) if not facts[1]
        ],
    }
    for kind, pairs in references.items():
        known = [(position, code[value]) for position, value in pairs if value in code]
        if not known:
            result["unavailable"][f"gold_{kind}"] = NO_REFERENCE[kind]
            continue
        positions, truth = (np.array(column) for column in zip(*known))
        result["gold"][kind] = {
            "items": len(known),
            "accuracy": {method: expected_accuracy(models.scores[method][positions], truth) for method in methods},
        }
    return result


def _with_positions(item_keys, item_facts):
    for position, item_id in enumerate(item_keys.tolist()):
        yield position, item_facts[item_id]
