"""Stored evaluation runs: start one (copy and checksum its inputs, queue it) and execute it.

The suites are the `run_<suite>` functions of `evaluation.suites`; `SUITES` says which files and settings
each takes, so the command, the web form and the API all describe a run the same way:
`start_run("chaos", {"divergence": True}, {"human": path, "predictions": path}, user)`.
"""
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.text import get_valid_filename

from annotation.services import access
from evaluation import suites
from evaluation.models import EvaluationRun
from evaluation.readers import InputError

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: type  # bool, int or str
    default: object
    help: str
    choices: tuple = ()


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    function: Callable[..., dict]
    # Input roles in the order the suite function takes them (the `evaluate` command's option names).
    files: tuple[str, ...]
    parameters: tuple[Parameter, ...] = field(default=())


SUITES = {
    suite.name: suite
    for suite in (
        Suite("unli", "U-SNLI probabilities (Pearson, Spearman, MSE)", suites.run_unli, ("gold", "predictions")),
        Suite(
            "chaos", "ChaosNLI: model vs 100 human votes", suites.run_chaos, ("human", "predictions"),
            (
                Parameter("model", str, None, "model name inside a prediction file with several"),
                Parameter("divergence", bool, False, "JS divergence instead of JS distance"),
                Parameter("seed", int, 0, "seed of the human split-half baseline"),
                Parameter("renormalise", bool, False, "rescale prediction rows that do not sum to 1"),
            ),
        ),
        Suite("nli-atoms", "Atomic NLI logical consistency", suites.run_nli_atoms, ("input",)),
        Suite(
            "defeasible", "Defeasible atoms: critical atoms, inferential consistency", suites.run_defeasible,
            ("input",),
            (
                Parameter("weighted", bool, False, "weight buckets by support"),
                Parameter("atom_labels", str, "auto", "how atom labels are scored", ("auto", "binary", "ternary")),
            ),
        ),
        Suite("transitivity", "Transitive self-consistency", suites.run_transitivity, ("input",)),
        Suite("epistemic", "Epistemic closure: score predictions", suites.run_epistemic_score,
              ("input", "predictions")),
    )
}
SUITE_CHOICES = [(suite.name, f"{suite.name}: {suite.title}") for suite in SUITES.values()]


class RunError(ValueError):
    """A run that cannot be started as asked (unknown suite, missing file, bad setting)."""


def get_suite(name: str) -> Suite:
    try:
        return SUITES[name]
    except KeyError:
        raise RunError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}") from None


def clean_parameters(suite_name: str, params: dict | None) -> dict:
    """Every setting of the suite, with its default where not given; values from forms ("true", "3") are
    converted. Raises RunError on an unknown name or a value of the wrong kind."""
    suite = get_suite(suite_name)
    known = {parameter.name: parameter for parameter in suite.parameters}
    params = dict(params or {})
    unknown = sorted(set(params) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise RunError(f"suite {suite.name} has no setting {unknown[0]!r} (settings: {allowed})")
    return {name: _convert(parameter, params.get(name)) for name, parameter in known.items()}


def _convert(parameter: Parameter, value):
    if value is None:
        return parameter.default
    if parameter.kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise RunError(f"setting {parameter.name!r}: {value!r} is not true or false")
    if parameter.kind is int:
        if isinstance(value, bool):
            raise RunError(f"setting {parameter.name!r}: {value!r} is not an integer")
        try:
            return int(str(value).strip())
        except ValueError:
            raise RunError(f"setting {parameter.name!r}: {value!r} is not an integer") from None
    text = str(value).strip()
    if not text:
        return parameter.default
    if parameter.choices and text not in parameter.choices:
        raise RunError(f"setting {parameter.name!r}: {text!r} is not one of {', '.join(parameter.choices)}")
    return text


def run_suite(suite_name: str, paths: dict, params: dict | None = None) -> dict:
    """Run a suite on files on disk (role -> path) and return its result dict, storing nothing."""
    suite = get_suite(suite_name)
    return suite.function(*(paths[role] for role in suite.files), **clean_parameters(suite_name, params))


def start_run(suite, params, input_paths, user, project=None, background=True) -> EvaluationRun:
    """Store a run of `suite` and execute it: queued as a task when `background`, else here and now.

    input_paths: role -> a path on disk or an uploaded file (anything with `.name` and `.chunks()`), one for
    each of the suite's `files`. Each is copied to MEDIA_ROOT/evaluation/<run id>/<role>/ with its size and
    sha256 recorded, so the run can be checked and re-scored later. Problems with the request or with the
    files' content (suites.check_inputs reads and checks them first) raise RunError and store nothing.
    """
    spec = get_suite(suite)
    params = clean_parameters(suite, params)
    missing = [role for role in spec.files if input_paths.get(role) is None]
    extra = sorted(set(input_paths) - set(spec.files))
    if missing or extra:
        raise RunError(f"suite {suite} takes the files {' and '.join(spec.files)}"
                       f" ({'missing ' + ', '.join(missing) if missing else 'not ' + ', '.join(extra)})")
    for role in spec.files:
        source = input_paths[role]
        if not hasattr(source, "chunks") and not Path(source).is_file():
            raise RunError(f"{source}: no such file ({role})")
    try:
        suites.check_inputs(suite, input_paths, params)
    except InputError as error:
        raise RunError(str(error)) from None

    run = EvaluationRun.objects.create(
        suite=suite, parameters=params, created_by=user if user and user.is_authenticated else None, project=project
    )
    # Copied outside a transaction: a large upload must not hold the database's write lock.
    try:
        run.inputs = [store_input(run, role, input_paths[role]) for role in spec.files]
    except BaseException:
        run.delete()  # also removes the partial copies
        raise
    run.save(update_fields=["inputs"])

    if background:
        from evaluation.tasks import execute_run_task

        execute_run_task.enqueue(run.pk)
    else:
        execute_run(run.pk)
    run.refresh_from_db()
    return run


def store_input(run: EvaluationRun, role: str, source) -> dict:
    """Copy one input into the run's folder, hashing it on the way; its entry for `run.inputs`."""
    name = get_valid_filename(Path(source.name if hasattr(source, "chunks") else source).name) or role
    target = run.folder / role / name
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with open(target, "wb") as out:
        for chunk in _chunks(source):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return {
        "role": role,
        "name": name,
        "size": size,
        "sha256": digest.hexdigest(),
        "path": str(target.relative_to(Path(settings.MEDIA_ROOT))),
    }


def _chunks(source, size: int = 1 << 20):
    if hasattr(source, "chunks"):
        source.seek(0)
        yield from source.chunks()
        return
    with open(source, "rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def execute_run(run_id: int) -> EvaluationRun:
    """Run a queued run's suite on its stored inputs and record the result or the error.

    A run that is not queued any more (a task delivered twice) is left as it is.
    """
    claimed = EvaluationRun.objects.filter(pk=run_id, status=EvaluationRun.Status.QUEUED).update(
        status=EvaluationRun.Status.RUNNING, started_at=timezone.now()
    )
    run = EvaluationRun.objects.get(pk=run_id)
    if not claimed:
        return run
    media = Path(settings.MEDIA_ROOT)
    paths = {entry["role"]: media / entry["path"] for entry in run.inputs}
    try:
        run.results = run_suite(run.suite, paths, run.parameters)
        run.status = EvaluationRun.Status.DONE
    except Exception as error:  # noqa: BLE001  a failing suite is a failed run, never a crashed worker
        run.status = EvaluationRun.Status.FAILED
        run.error = describe_error(error, run)
        if not isinstance(error, (InputError, OSError, RunError)):
            logger.exception("evaluation run %s failed", run.pk)
    run.finished_at = timezone.now()
    run.save(update_fields=["results", "status", "error", "finished_at"])
    return run


def describe_error(error: Exception, run: EvaluationRun) -> str:
    """The error as the user should read it: stored paths shown as the uploaded file names."""
    if isinstance(error, OSError) and error.filename:
        message = f"{error.filename}: {error.strerror}"
    elif isinstance(error, (InputError, RunError)):
        message = str(error)
    else:
        message = f"{type(error).__name__}: {error}"
    media = Path(settings.MEDIA_ROOT)
    for entry in run.inputs:
        message = message.replace(str(media / entry["path"]), entry["name"])
    return message


def visible_runs(user):
    """Runs a user may see: admins all, authors their own."""
    return access.visible_runs(user, EvaluationRun.objects.select_related("created_by", "project"))

