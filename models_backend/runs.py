"""The model job kinds (prediction, UNLI training, atom and antonym pipelines), registered with the one jobs
module, and how the browser starts each (`FORMS`): the checkpoints it picks from the registry, the files it
takes from a study or an upload, and its settings, declared once (common.schema). Scoring a checkpoint on a
study is the study evaluation's (evaluation.study_evaluation).
The command line calls the same job functions directly, with a progress bar instead.

A job's files are its inputs (copied in with checksums: role "input", or "train" and "eval") and what
it writes goes into its own folder, unless its settings name paths on the server (the command line's way).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings as django_settings

from common.schema import Schema, Setting
from common.vocabulary import UPDATE
from jobs.kinds import HOUR, JobError, JobKind, register
from jobs.running import output_file, scratch_folder
from models_backend.dataio import read_pairs
from models_backend.model_kinds import PRECISIONS, ModelKind
from models_backend.training.recipe import LOSSES, UnliSettings

# The pipelines (torch, transformers) are imported inside the job functions: this module is imported at every
# start of the app, a web process or a command that never runs a model.

PREDICT, EVALUATE_MODEL, TRAIN_UNLI = "predict", "evaluate_model", "train_unli"
GENERATE_ATOMS, MAKE_ANTONYM_PAIRS = "generate_atoms", "make_antonym_pairs"
OUTPUT_EXTENSIONS = {"jsonl": "jsonl", "csv": "csv", "chaosnli": "json"}


def _input(job, role: str, key: str):
    """An input file of the job: its stored copy when it has one, else the path its settings name."""
    if any(entry["role"] == role for entry in job.inputs):
        return job.input_path(role)
    return job.params[key]


def _output(job, key: str, name: str):
    return job.params.get(key) or output_file(job, name)


def _predict(job, progress):
    from models_backend.checkpoint_spec import trained_length
    from models_backend.prediction import predict_file

    params = job.params
    output_format = params.get("output_format", "jsonl")
    job.write_log(f"predicting with {Path(params['model_dir']).name} at precision {params.get('precision', 'auto')}")
    return predict_file(
        params["model_dir"],
        _input(job, "input", "input_path"),
        _output(job, "output_path", f"predictions.{OUTPUT_EXTENSIONS.get(output_format, 'jsonl')}"),
        output_format=output_format,
        batch_size=int(params.get("batch_size", 64)),
        device=params.get("device"),
        precision=params.get("precision", "auto"),
        progress=progress,
        max_length=params.get("max_length") or trained_length(Path(params["model_dir"])),
    )


def _retired_evaluation(job, progress):
    raise JobError(
        "evaluations against gold are now study evaluations: evaluate the checkpoint from its study's "
        'Evaluate page (docs/models.md, "Evaluating a study")'
    )


def _train_unli(job, progress):
    from models_backend.training.unli import train_unli

    params = job.params
    output_dir = params.get("output_dir") or output_file(job, "model")
    recipe = UnliSettings(**params.get("settings", {}))
    job.write_log(
        f"training from {Path(params['base']).name if params.get('base') else 'the packaged MiniLM'}; "
        f"surrogate pre-training: {'yes' if recipe.pretrain_snli or recipe.pretrain_chaosnli else 'no'}",
    )
    result = train_unli(
        output_dir,
        _input(job, "train", "train_path"),
        _input(job, "eval", "eval_path"),
        recipe,
        base=params.get("base"),
        device=params.get("device"),
        progress=progress,
        baseline=bool(params.get("with_baseline")),
    )
    job.write_log(f"eval Pearson r {result['pearson']:.4f}, Spearman rho {result['spearman']:.4f}")
    if result.get("warning"):
        job.write_log(f"warning: {result['warning']}")
    if not params.get("output_dir"):
        from models_backend.catalog import store_trained

        stored = store_trained(job, Path(output_dir))
        job.write_log(f"model archived as checkpoint {stored.key} (sha256 {stored.sha256[:12]}…)")
    return result


def _generate_atoms(job, progress):
    from models_backend.pipelines.atoms import generate_atoms_file

    params = job.params
    input_path = _input(job, "input", "input_path")
    result = generate_atoms_file(
        params["lm_dir"],
        params["nli_dir"],
        input_path,
        _output(job, "output_path", "atoms.jsonl"),
        defeasible=bool(params.get("defeasible")),
        max_new_tokens=int(params.get("max_new_tokens", 80)),
        device=params.get("device"),
        progress=progress,
    )
    if job.project is not None and params.get("into_study"):
        result["imported"] = _import_atoms(job, input_path, Path(result["output"]))
    return result


def _import_atoms(job, pairs_path, atoms_path) -> dict:
    """The pairs become the validity study's examples, then the kept atoms its items (re-importing adds nothing)."""
    from dataset_io.services.importers import import_file

    examples = scratch_folder(job) / "examples.jsonl"
    with examples.open("w", encoding="utf-8") as handle:
        for row in read_pairs(pairs_path):
            example = {"id": row.id, "premise": row.premise, "hypothesis": row.hypothesis, **_update_of(row.record)}
            handle.write(json.dumps(example) + "\n")
    added = import_file(job.project, examples, "jsonl")
    atoms = (
        import_file(job.project, atoms_path, "atoms")
        if any(json.loads(line)["atoms"] for line in atoms_path.open(encoding="utf-8"))
        else None
    )
    job.write_log(
        f"imported into study {job.project.slug}: {added.created} examples, {atoms.created if atoms else 0} atoms"
    )
    return {"study": job.project.slug, "examples": added.created, "atoms": atoms.created if atoms else 0}


def _update_of(record: dict) -> dict:
    """An input row's update and its type (delta-NLI's or the studio's spelling), as the studio's JSON Lines
    import reads them: the validity study's valid atoms go on to a defeasible study with their update
    (annotation.services.atom_chain)."""
    source = record["example"] if isinstance(record.get("example"), dict) else record
    update = source.get("update") or source.get("Update") or ""
    studio = source.get("nli_studio") if isinstance(source.get("nli_studio"), dict) else {}
    kind = source.get("update_type") or source.get("UpdateType") or studio.get("update_type") or ""
    if not isinstance(update, str) or not update.strip():
        return {}
    if kind not in UPDATE.labels:
        return {"update": update}
    return {"update": update, "label": kind, "nli_studio": {"update_type": kind}}  # delta-NLI's label: its type


def _make_antonym_pairs(job, progress):
    from models_backend.pipelines.antonyms import make_antonym_pairs_file

    params = job.params
    return make_antonym_pairs_file(
        _input(job, "input", "input_path"),
        params["nli_dir"],
        _output(job, "output_path", "antonym_pairs.jsonl"),
        params.get("wordnet_dir") or django_settings.WORDNET_DIR,
        embedder_dir=params.get("embedder_dir"),
        scorer_dir=params.get("scorer_dir"),
        max_perplexity_ratio=float(params.get("max_perplexity_ratio", 2.0)),
        device=params.get("device"),
        progress=progress,
    )


def _training_warning(job) -> dict:
    """A training on few rows says so above its figures (training.recipe.MIN_TRAINING_ROWS)."""
    return {"panel": "models_backend/_training_warning.html"} if (job.result or {}).get("warning") else {}


def model_job(run: Callable) -> Callable:
    """A model job first finds its checkpoints on the worker's host (fetching trained ones from the storage),
    and hands its cached GPU memory back when it ends, however it ends (a worker outlives its jobs; see
    devices.release_cuda_memory)."""

    @functools.wraps(run)
    def run_here(job, progress):
        from models_backend.catalog import materialise

        try:
            materialise(job)
            return run(job, progress)
        finally:
            if "torch" in sys.modules:  # a job that failed before loading a model has nothing to hand back
                from models_backend.devices import release_cuda_memory

                release_cuda_memory()

    return run_here


for _kind in (
    JobKind(PREDICT, "Prediction", model_job(_predict), group="models", time_limit=12 * HOUR, repeatable=True),
    # Retired: the study evaluation (evaluation.study_evaluation) scores checkpoints on a study. Still
    # registered so that the pages of finished evaluations against gold keep showing their figures.
    JobKind(EVALUATE_MODEL, "Model evaluation against gold (retired)", _retired_evaluation, group="models"),
    # Not repeated by itself after a fault: hours of a GPU are the author's to spend again.
    JobKind(
        TRAIN_UNLI,
        "UNLI training",
        model_job(_train_unli),
        group="models",
        present=_training_warning,
        time_limit=48 * HOUR,
    ),
    # Not repeatable: it may import into a study.
    JobKind(GENERATE_ATOMS, "Atom generation", model_job(_generate_atoms), group="models", time_limit=24 * HOUR),
    JobKind(
        MAKE_ANTONYM_PAIRS,
        "Antonym pairs",
        model_job(_make_antonym_pairs),
        group="models",
        time_limit=12 * HOUR,
        repeatable=True,
    ),
):
    register(_kind)


# ---------------------------------------------------------------------------- starting them from the browser

CLASSIFIERS = (ModelKind.NLI.value, ModelKind.UNLI.value, ModelKind.DEFEASIBLE.value, ModelKind.ACCEPTABILITY.value)
PAIR_FORMATS = ("usnli", "snli", "chaosnli")  # exports whose rows carry an id, a premise and a hypothesis


@dataclass(frozen=True)
class ModelSlot:
    """A checkpoint the job takes, picked from the registry (its folder goes into the job's settings)."""

    param: str
    label: str
    kinds: tuple[str, ...]
    required: bool = True
    help: str = ""


@dataclass(frozen=True)
class FileSlot:
    """An input file: a study's export (the first of `formats` its task type offers) or an upload. `gold`: the
    rows are labels a model is scored or trained against (a study gives its items with a final label); else
    they are pairs to run on (a study gives every item)."""

    role: str
    label: str
    formats: tuple[str, ...]
    help: str = ""
    gold: bool = True


def _flat(values: dict, models: dict) -> dict:
    return {**models, **values}


@dataclass(frozen=True)
class ModelForm:
    name: str
    kind: str
    title: str
    help: str
    models: tuple[ModelSlot, ...]
    files: tuple[FileSlot, ...]
    settings: Schema = field(default=Schema(()))
    # The job's settings from the cleaned form settings and the picked checkpoints' folders.
    params: Callable[[dict, dict], dict] = _flat
    # The job also imports what it makes into a study of the user's (atoms into a validity study).
    into_study: bool = False


BATCH = Setting("batch_size", "int", 64, "pairs per forward pass", minimum=1, maximum=1024)
PRECISION = Setting(
    "precision",
    "choice",
    "auto",
    "auto: fp16 on a GPU, fp32 on a CPU; bf16-linear (CPUs with bfloat16 units) and int8 are the CPU fast paths",
    choices=tuple((p, p) for p in PRECISIONS),
)
RECIPE = UnliSettings()


def _training_params(values: dict, models: dict) -> dict:
    """The form's recipe as UnliSettings fields (only those given), the base and the baseline flag."""
    values = dict(values)
    pretrain, baseline = values.pop("pretrain"), values.pop("with_baseline")
    recipe = {name: value for name, value in values.items() if value is not None}
    if not pretrain:
        recipe.update(pretrain_snli=None, pretrain_chaosnli=[], pretrain_dnli=None)
    return {"settings": recipe, "with_baseline": baseline, **({"base": models["base"]} if models.get("base") else {})}


FORMS = {
    form.name: form
    for form in (
        ModelForm(
            "predict",
            PREDICT,
            "Predict",
            "Run a classifier or regressor over a study's pairs or an uploaded file.",
            (ModelSlot("model_dir", "Model", CLASSIFIERS),),
            (
                FileSlot(
                    "input",
                    "Pairs",
                    PAIR_FORMATS,
                    "JSONL or CSV with id, premise, hypothesis (U-SNLI CSV works too).",
                    gold=False,
                ),
            ),
            Schema(
                (
                    Setting(
                        "output_format",
                        "choice",
                        "jsonl",
                        "chaosnli: 3-way NLI models only",
                        choices=(("jsonl", "jsonl"), ("csv", "csv"), ("chaosnli", "chaosnli")),
                    ),
                    BATCH,
                    PRECISION,
                )
            ),
        ),
        ModelForm(
            "train_unli",
            TRAIN_UNLI,
            "Train a UNLI model",
            "Fine-tune an encoder on a slider study's gold probabilities (its U-SNLI export) and score it on another "
            "file. The defaults are the best recipe measured (docs/models.md).",
            (ModelSlot("base", "Base encoder", ("encoder",), required=False, help="Left empty: the packaged MiniLM."),),
            (
                FileSlot("train", "Training data", ("usnli",), "U-SNLI CSV: id, pre, hyp, unli."),
                FileSlot("eval", "Evaluation data", ("usnli",), "U-SNLI CSV the reported scores come from."),
            ),
            Schema(
                (
                    Setting("epochs", "int", RECIPE.epochs, "passes over the training data", minimum=1, maximum=50),
                    Setting("batch_size", "int", RECIPE.batch_size, "pairs per step", minimum=1, maximum=512),
                    Setting(
                        "lr",
                        "float",
                        RECIPE.lr,
                        "peak learning rate",
                        label="Learning rate",
                        minimum=1e-7,
                        maximum=1e-2,
                    ),
                    Setting("max_length", "int", RECIPE.max_length, "tokens per pair", minimum=8, maximum=512),
                    Setting(
                        "loss",
                        "choice",
                        RECIPE.loss,
                        "bce: regression; rank: margin ranking",
                        choices=tuple((loss, loss) for loss in LOSSES),
                    ),
                    Setting(
                        "rank_weight",
                        "float",
                        RECIPE.rank_weight,
                        "weight of a ranking hinge beside BCE",
                        minimum=0,
                        maximum=10,
                    ),
                    Setting("seed", "int", RECIPE.seed, "random seed", minimum=0, maximum=2**31 - 1),
                    Setting(
                        "seeds",
                        "int",
                        RECIPE.seeds,
                        "fine-tunings with consecutive seeds, averaged into one model",
                        label="Seeds averaged",
                        minimum=1,
                        maximum=8,
                    ),
                    Setting("max_train", "int", None, "use only the first N training rows", minimum=2),
                    Setting(
                        "pretrain",
                        "bool",
                        True,
                        "surrogate pre-training on the shared SNLI file first (when present)",
                        label="Surrogate pre-training",
                    ),
                    Setting("max_pretrain", "int", None, "use only the first N SNLI rows", minimum=1),
                    Setting(
                        "pretrain_epochs", "int", RECIPE.pretrain_epochs, "pre-training passes", minimum=1, maximum=10
                    ),
                    Setting("hypothesis_only", "bool", False, "train and predict on hypotheses alone"),
                    Setting("with_baseline", "bool", False, "also train on hypotheses alone and report its scores"),
                )
            ),
            params=_training_params,
        ),
        ModelForm(
            "generate_atoms",
            GENERATE_ATOMS,
            "Generate atoms",
            "Decompose each hypothesis with a causal LM, keep the atoms the NLI model says it entails, and import "
            "them into an atom validity study of yours for people to judge.",
            (
                ModelSlot("lm_dir", "Language model", (ModelKind.CAUSAL_LM.value,)),
                ModelSlot("nli_dir", "NLI model (pruning)", (ModelKind.NLI.value,)),
            ),
            (FileSlot("input", "Pairs", PAIR_FORMATS, "JSONL or CSV with id, premise, hypothesis.", gold=False),),
            Schema(
                (
                    Setting("defeasible", "bool", False, "also drop atoms the premise already entails"),
                    Setting("max_new_tokens", "int", 80, "tokens generated per hypothesis", minimum=8, maximum=512),
                )
            ),
            into_study=True,
        ),
        ModelForm(
            "antonyms",
            MAKE_ANTONYM_PAIRS,
            "Antonym pairs",
            "Replace a word of each hypothesis by a WordNet antonym, keep the most fitting, label the four pairs "
            "with an NLI model.",
            (
                ModelSlot("nli_dir", "NLI model", (ModelKind.NLI.value,)),
                ModelSlot(
                    "embedder_dir", "Embedder", ("encoder",), required=False, help="Left empty: the packaged MiniLM."
                ),
                ModelSlot(
                    "scorer_dir",
                    "Acceptability scorer",
                    (ModelKind.CAUSAL_LM.value, ModelKind.ACCEPTABILITY.value),
                    required=False,
                    help="Left empty: no acceptability filter.",
                ),
            ),
            (FileSlot("input", "Pairs", PAIR_FORMATS, gold=False),),
            Schema(
                (
                    Setting(
                        "max_perplexity_ratio",
                        "float",
                        2.0,
                        "a causal LM scorer keeps H' up to this times H's perplexity",
                        minimum=1.0,
                        maximum=100.0,
                    ),
                )
            ),
        ),
        ModelForm(
            "score_choices",
            PREDICT,
            "LM choice scoring",
            "Ask a causal LM a few-shot multiple-choice question per pair (entailment, neutral, contradiction) and "
            "write its distribution over the options.",
            (ModelSlot("model_dir", "Language model", (ModelKind.CAUSAL_LM.value,)),),
            (FileSlot("input", "Pairs", PAIR_FORMATS, gold=False),),
            Schema(
                (
                    Setting(
                        "output_format",
                        "choice",
                        "jsonl",
                        "",
                        choices=(("jsonl", "jsonl"), ("csv", "csv"), ("chaosnli", "chaosnli")),
                    ),
                    Setting("batch_size", "int", 8, "prompts per forward pass", minimum=1, maximum=256),
                )
            ),
        ),
    )
}
