"""Evaluation runs are jobs of the kind "evaluate" (the one jobs module stores, queues and runs them).

The suites are the `run_<suite>` functions of `evaluation.suites`; `SUITES` says which files each takes
and declares its settings once (common.schema), so the command, the web form and the API describe a run
the same way: `start_run("chaos", {"divergence": True}, {"human": path, "predictions": path}, user)`.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from common.readers import RowError
from common.schema import Schema, Setting, SettingError
from core import roles
from jobs.kinds import HOUR, JobKind, register
from jobs.models import Job
from jobs.services import JobError, start_job

KIND = "evaluate"


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    # The suite's function in evaluation.suites, looked up when a run needs it: the suites load pandas and
    # scipy, and a web process that only lists runs or shows the form should not (keep web processes lean).
    function_name: str
    # Input roles in the order the suite function takes them (the `evaluate` command's option names).
    files: tuple[str, ...]
    settings: Schema = field(default=Schema(()))

    @property
    def function(self) -> Callable[..., dict]:
        from evaluation import suites

        return getattr(suites, self.function_name)


# Settings of the suites that read model predictions in the chaos suite's formats.
MODEL_SETTING = Setting("model", "str", None, "model name inside a prediction file with several", max_length=200)
RENORMALISE_SETTING = Setting("renormalise", "bool", False, "rescale prediction rows that do not sum to 1")

SUITES = {
    suite.name: suite
    for suite in (
        Suite("unli", "U-SNLI probabilities (Pearson, Spearman, MSE)", "run_unli", ("gold", "predictions")),
        Suite(
            "chaos",
            "ChaosNLI: model vs 100 human votes",
            "run_chaos",
            ("human", "predictions"),
            Schema(
                (
                    MODEL_SETTING,
                    Setting("divergence", "bool", False, "JS divergence instead of JS distance"),
                    Setting(
                        "seed",
                        "int",
                        0,
                        "seed of the human split-half baseline and of the bootstrap",
                        minimum=0,
                        maximum=2**32 - 1,
                    ),
                    RENORMALISE_SETTING,
                    Setting(
                        "bootstrap",
                        "int",
                        1000,
                        "bootstrap resamples of the items for the 95% intervals (0: no intervals)",
                        minimum=0,
                        maximum=100_000,
                    ),
                )
            ),
        ),
        Suite("nli-atoms", "Atomic NLI logical consistency", "run_nli_atoms", ("input",)),
        Suite(
            "defeasible",
            "Defeasible atoms: critical atoms, inferential consistency",
            "run_defeasible",
            ("input",),
            Schema(
                (
                    Setting("weighted", "bool", False, "weight buckets by support"),
                    Setting(
                        "atom_labels",
                        "choice",
                        "auto",
                        "how atom labels are scored",
                        choices=(("auto", "auto"), ("binary", "binary"), ("ternary", "ternary")),
                    ),
                )
            ),
        ),
        Suite("transitivity", "Transitive self-consistency", "run_transitivity", ("input",)),
        Suite("epistemic", "Epistemic closure: score predictions", "run_epistemic_score", ("input", "predictions")),
        Suite(
            "alt-test",
            "Alternative annotator test: may the model replace the annotators?",
            "run_alt_test",
            ("annotations", "predictions"),
            Schema(
                (
                    MODEL_SETTING,
                    RENORMALISE_SETTING,
                    # The defaults are metrics.alt_test's (not imported here: it loads numpy).
                    Setting(
                        "epsilon",
                        "float",
                        0.1,
                        "allowance for the model's lower cost: 0.1 crowd workers, 0.15 skilled, 0.2 experts",
                        minimum=0,
                        maximum=0.99,
                    ),
                    Setting(
                        "alpha", "float", 0.05, "false discovery rate across annotators", minimum=0.0001, maximum=0.5
                    ),
                    Setting(
                        "min_items",
                        "int",
                        30,
                        "items an annotator shares with others to be tested",
                        minimum=2,
                        maximum=1_000_000,
                    ),
                    Setting(
                        "alignment",
                        "choice",
                        "label",
                        "score the model's label (accuracy) or its probabilities (1 - TV distance)",
                        choices=(("label", "label"), ("distribution", "distribution")),
                    ),
                )
            ),
        ),
    )
}
SUITE_CHOICES = [(suite.name, f"{suite.name}: {suite.title}") for suite in SUITES.values()]


class RunError(JobError):
    """A run that cannot be started as asked (unknown suite, missing file, bad setting, bad input)."""


def get_suite(name: str) -> Suite:
    try:
        return SUITES[name]
    except KeyError:
        raise RunError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}") from None


def all_settings() -> Schema:
    """Every suite's settings (the web form and the API offer them all; each suite takes its own)."""
    seen: dict[str, Setting] = {}
    for suite in SUITES.values():
        for setting in suite.settings:
            seen.setdefault(setting.name, setting)
    return Schema(tuple(seen.values()))


def clean_parameters(suite_name: str, params: dict | None) -> dict:
    """Every setting of the suite, with its default where not given; values from forms ("true", "3") are
    converted. Raises RunError naming an unknown setting or a value of the wrong kind."""
    suite = get_suite(suite_name)
    try:
        return suite.settings.clean(dict(params or {}))
    except SettingError as error:
        name, message = next(iter(error.errors.items()))
        settings = ", ".join(setting.name for setting in suite.settings) or "none"
        if message == "is not a setting here":
            raise RunError(f"suite {suite.name} has no setting {name!r} (settings: {settings})") from None
        raise RunError(f"setting {name!r}: {message}") from None


def run_suite(suite_name: str, paths: dict, params: dict | None = None) -> dict:
    """Run a suite on files on disk (role -> path) and return its result dict, storing nothing."""
    suite = get_suite(suite_name)
    return suite.function(*(paths[role] for role in suite.files), **clean_parameters(suite_name, params))


def start_run(suite, params, input_paths, user, project=None, background=True) -> Job:
    """Store an evaluation run and execute it: queued as a job when `background`, else here and now.

    input_paths: role -> a path on disk or an uploaded file, one for each of the suite's `files`; each is
    copied into the job with its size and sha256, so the run can be checked and re-scored later. Problems
    with the request or with the files' content (suites.check_inputs reads and checks them first) raise
    RunError and store nothing.
    """
    spec = get_suite(suite)
    params = clean_parameters(suite, params)
    missing = [role for role in spec.files if input_paths.get(role) is None]
    extra = sorted(set(input_paths) - set(spec.files))
    if missing or extra:
        raise RunError(
            f"suite {suite} takes the files {' and '.join(spec.files)}"
            f" ({'missing ' + ', '.join(missing) if missing else 'not ' + ', '.join(extra)})"
        )
    for role in spec.files:
        if not hasattr(input_paths[role], "chunks") and not Path(input_paths[role]).is_file():
            raise RunError(f"{input_paths[role]}: no such file ({role})")
    from evaluation import suites

    try:
        suites.check_inputs(suite, input_paths, params)
    except RowError as error:
        raise RunError(str(error)) from None
    return start_job(
        KIND,
        {"suite": suite, "parameters": params},
        user,
        project=project,
        inputs={role: input_paths[role] for role in spec.files},
        background=background,
    )


def _run(job: Job, progress) -> dict:
    paths = {entry["role"]: job.input_path(entry["role"]) for entry in job.inputs}
    return run_suite(job.params["suite"], paths, job.params["parameters"])


def _present(job: Job) -> dict:
    """A finished run's page: its figures as tables and, for the chaos suite, the entropy-bin plot."""
    from evaluation.plots import entropy_bins_svg
    from evaluation.tables import show, split_result, table_cells
    from jobs.views import safe_svg

    scalars, tables = split_result(job.result)
    context = {
        "scalars": [(name, show(value)) for name, value in scalars],
        "tables": [(name, *table_cells(rows)) for name, rows in tables],
        "results_url": f"/api/evaluation/runs/{job.pk}/results/",
    }
    if job.params["suite"] == "chaos" and job.result.get("bins"):
        context["plot"] = safe_svg(entropy_bins_svg(job.result["bins"], job.result.get("jsd_measure", "distance")))
        context["plot_caption"] = (
            f"Accuracy and JS {job.result.get('jsd_measure', 'distance')} to the human "
            "distribution per bin of human label entropy (5 quantile bins)."
        )
    return context


register(
    JobKind(
        KIND,
        "Evaluation",
        _run,
        group="evaluation",
        describe_job=lambda job: f"Evaluation: {job.params.get('suite')}",
        present=_present,
        time_limit=4 * HOUR,
        repeatable=True,
    )
)


def visible_runs(user):
    """Runs a user may see: admins all, authors their own."""
    return roles.visible_runs(user, Job.objects.filter(kind=KIND).select_related("created_by", "project"))
