"""The model job kinds (prediction, UNLI training, atom and antonym pipelines), registered with the one
jobs module. The command line calls the same job functions directly, with a progress bar instead.

A job's files are its inputs (copied in with checksums: role "input", or "train" and "eval") and what it
writes goes into its own folder, unless its settings name paths on the server (the command line's way).
"""
from __future__ import annotations

from models_backend.pipelines.antonyms import make_antonym_pairs_file
from models_backend.pipelines.atoms import generate_atoms_file
from models_backend.prediction import predict_file
from models_backend.training.unli import UnliSettings, train_unli
from jobs.kinds import JobKind, register
from jobs.services import output_file

PREDICT, TRAIN_UNLI, GENERATE_ATOMS, MAKE_ANTONYM_PAIRS = "predict", "train_unli", "generate_atoms", "make_antonym_pairs"
OUTPUT_EXTENSIONS = {"jsonl": "jsonl", "csv": "csv", "chaosnli": "json"}


def _input(job, role: str, key: str):
    """An input file of the job: its stored copy when it has one, else the path its settings name."""
    if any(entry["role"] == role for entry in job.inputs):
        return job.input_path(role)
    return job.params[key]


def _output(job, key: str, name: str):
    return job.params.get(key) or output_file(job, name)


def _predict(job, progress):
    params = job.params
    output_format = params.get("output_format", "jsonl")
    return predict_file(
        params["model_dir"], _input(job, "input", "input_path"),
        _output(job, "output_path", f"predictions.{OUTPUT_EXTENSIONS.get(output_format, 'jsonl')}"),
        output_format=output_format, batch_size=int(params.get("batch_size", 64)), device=params.get("device"),
        precision=params.get("precision", "auto"), progress=progress,
    )


def _train_unli(job, progress):
    params = job.params
    output_dir = params.get("output_dir") or output_file(job, "model")
    result = train_unli(
        output_dir, _input(job, "train", "train_path"), _input(job, "eval", "eval_path"),
        UnliSettings(**params.get("settings", {})), base=params.get("base"), device=params.get("device"),
        progress=progress, baseline=bool(params.get("with_baseline")),
    )
    return result


def _generate_atoms(job, progress):
    params = job.params
    return generate_atoms_file(
        params["lm_dir"], params["nli_dir"], _input(job, "input", "input_path"),
        _output(job, "output_path", "atoms.jsonl"), defeasible=bool(params.get("defeasible")),
        device=params.get("device"), progress=progress,
    )


def _make_antonym_pairs(job, progress):
    params = job.params
    return make_antonym_pairs_file(
        _input(job, "input", "input_path"), params["nli_dir"], _output(job, "output_path", "antonym_pairs.jsonl"),
        params["wordnet_dir"], embedder_dir=params.get("embedder_dir"), scorer_dir=params.get("scorer_dir"),
        device=params.get("device"), progress=progress,
    )


for _kind in (
    JobKind(PREDICT, "Prediction", _predict, group="models"),
    JobKind(TRAIN_UNLI, "UNLI training", _train_unli, group="models"),
    JobKind(GENERATE_ATOMS, "Atom generation", _generate_atoms, group="models"),
    JobKind(MAKE_ANTONYM_PAIRS, "Antonym pairs", _make_antonym_pairs, group="models"),
):
    register(_kind)
