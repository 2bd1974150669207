"""The CUDA paths on a real GPU: half-precision inference against the CPU's float32 labels, the CPU-only
precisions refused, UNLI training steps, jobs taken by a worker of the gpu queue, the GPU's memory handed back
after a job. Marked gpu; skipped where PyTorch sees no CUDA device. bin/gpu-check runs them on a GPU machine
(docs/models.md, "GPU check")."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from conftest import PAIRS, WORDS, build_bert_classifier, write_pairs_jsonl
from django.core.management import CommandError, call_command
from safetensors.torch import load_file
from test_train_unli import write_usnli

from jobs.models import Job
from models_backend.prediction import predict_file
from models_backend.registry import inspect_checkpoint, load_model
from models_backend.runner import predict_pairs
from models_backend.runs import PREDICT
from models_backend.training.unli import UnliSettings, train_unli
from tests.conftest import REPO

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (bin/gpu-check runs these on one)"),
]
LABELS = ("entailment", "neutral", "contradiction")
WORKER_SECONDS = 180  # the worker's start (Django, torch) and two jobs on tiny models


def random_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """Pairs of random words: a spread of lengths and of outputs, more rows than PAIRS."""
    rng = random.Random(seed)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words))

    return [(sentence(rng.randint(4, 20)), sentence(rng.randint(2, 10))) for _ in range(count)]


def probabilities(path) -> np.ndarray:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return np.array([[row["probabilities"][name] for name in LABELS] for row in rows])


@pytest.fixture(scope="module")
def spread_nli(tmp_path_factory):
    """A tiny classifier whose probabilities spread over a few per cent between pairs: weights at 0.15 (the
    usual BERT scale, 0.02, gives every pair the same output; the shared tiny model's 0.5 gives margins that
    no half precision keeps). With bfloat16 emulated on a CPU, its labels matched float32 on all 512 pairs."""
    folder = tmp_path_factory.mktemp("spread_nli")
    build_bert_classifier(folder, initializer_range=0.15, seed=1)
    return folder


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_cuda_predictions_match_cpu_fp32_labels(spread_nli, tmp_path, precision, record_property):
    source = write_pairs_jsonl(tmp_path / "in.jsonl", random_pairs(512))
    cpu = predict_file(spread_nli, source, tmp_path / "cpu.jsonl", device="cpu", precision="fp32", batch_size=64)
    gpu = predict_file(spread_nli, source, tmp_path / "gpu.jsonl", device="cuda", precision=precision, batch_size=64)
    assert (gpu["device"], gpu["precision"]) == ("cuda", precision) and cpu["device"] == "cpu"
    reference, on_gpu = probabilities(tmp_path / "cpu.jsonl"), probabilities(tmp_path / "gpu.jsonl")
    agreement = float(np.mean(reference.argmax(axis=1) == on_gpu.argmax(axis=1)))
    largest_difference = float(np.abs(reference - on_gpu).max())
    record_property("argmax_agreement", round(agreement, 4))
    record_property("max_probability_diff", round(largest_difference, 5))
    print(f"{precision} on CUDA vs fp32 on CPU: argmax agreement {agreement:.4f}, max |dp| {largest_difference:.5f}")
    assert agreement >= 0.99
    assert np.all(np.isfinite(on_gpu)) and np.allclose(on_gpu.sum(axis=1), 1.0, atol=1e-3)


@pytest.mark.parametrize("precision", ["int8", "bf16-linear"])
def test_cpu_only_precisions_are_refused_on_cuda(spread_nli, tmp_path, precision):
    source = write_pairs_jsonl(tmp_path / "in.jsonl", PAIRS[:2])
    with pytest.raises(ValueError, match=f"precision '{precision}' runs on the CPU only"):
        predict_file(spread_nli, source, tmp_path / "o.jsonl", device="cuda", precision=precision)
    with pytest.raises(CommandError, match="runs on the CPU only"):
        call_command(
            "predict",
            model=str(spread_nli),
            input=str(source),
            output=str(tmp_path / "o.jsonl"),
            device="cuda",
            precision=precision,
        )
    assert not (tmp_path / "o.jsonl").exists()


def test_unli_training_steps_on_cuda(tiny_encoder, tmp_path):
    targets = [0.9, 0.1, 0.5, 0.02, 0.7, 0.3, 0.6]
    rows = [(p, h, t) for (p, h), t in zip(PAIRS, targets)]
    train = write_usnli(tmp_path / "train.csv", rows * 4)
    evaluation = write_usnli(tmp_path / "eval.csv", rows)
    settings = UnliSettings(epochs=2, batch_size=4, seed=3, seeds=1).without_pretraining()
    result = train_unli(tmp_path / "model", train, evaluation, settings, base=tiny_encoder, device="cuda")
    assert result["device"] == "cuda" and result["n_train"] == 28
    assert all(np.isfinite(result[key]) for key in ("pearson", "spearman", "mse"))
    weights = load_file(tmp_path / "model" / "model.safetensors")
    encoder = load_file(tiny_encoder / "model.safetensors")
    # Autocast ran the steps in bfloat16; the weights themselves stay float32, finite, and moved.
    assert all(value.dtype == torch.float32 and torch.isfinite(value).all() for value in weights.values())
    moved = [
        key for key in encoder if f"bert.{key}" in weights and not torch.equal(encoder[key], weights[f"bert.{key}"])
    ]
    assert moved and "classifier.weight" in weights
    spec = inspect_checkpoint(tmp_path / "model")
    model, tokenizer = load_model(spec, torch.device("cuda"), "fp32")
    predictions = predict_pairs(spec, model, tokenizer, [p for p, _ in PAIRS], [h for _, h in PAIRS])
    assert np.all((predictions > 0) & (predictions < 1))


@pytest.mark.django_db
def test_a_job_hands_its_gpu_memory_back(spread_nli, tmp_path, settings):
    from jobs import running

    settings.MEDIA_ROOT = tmp_path / "media"
    # cuBLAS keeps a workspace per handle for the life of the process (not the job's to hand back): made here,
    # by the products the job will run, before the baseline is read.
    weight = torch.ones(64, 64, device="cuda", dtype=torch.float16)
    torch.nn.functional.linear(weight, weight, weight[0]) @ weight
    del weight
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # what earlier tests left cached in this process
    torch.cuda.reset_peak_memory_stats()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    source = write_pairs_jsonl(tmp_path / "in.jsonl", random_pairs(256))
    params = {
        "model_dir": str(spread_nli),
        "input_path": str(source),
        "output_path": str(tmp_path / "o.jsonl"),
        "device": "cuda",
        "batch_size": 64,
    }
    job = running.execute(Job.objects.create(kind=PREDICT, params=params).pk)
    assert job.status == "done", job.error
    assert job.result["device"] == "cuda" and job.result["precision"] == "fp16"
    assert torch.cuda.max_memory_allocated() > allocated  # the model really went to the GPU ...
    assert torch.cuda.memory_allocated() == allocated  # ... and nothing of it is left there
    assert torch.cuda.memory_reserved() == reserved  # nor cached by PyTorch's allocator


def _django_command(env: dict, *args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# A prediction, and a study evaluation of an nli_label study (its inference on the gpu queue, docs/models.md).
QUEUE_JOBS = """
import json
from annotation.services.projects import create_project
from core.roles import grant_role
from dataset_io.services.importers import import_file
from django.contrib.auth import get_user_model
from evaluation.study_evaluation.jobs import start_study_evaluation
from jobs import services
author = get_user_model().objects.create_user(username="gpu-author", password="a-test-password")
grant_role(author, "author")
study = create_project("gpu-labels", "nli_label", author, status="published")
import_file(study, "{gold}", "chaosnli")
predict = services.start_job("{predict}", {{"model_dir": "{model}", "device": "cuda", "precision": "bf16"}},
    inputs={{"input": "{pairs}"}}, queue="gpu")
evaluate = start_study_evaluation(study, author, ["shared/{model_name}"], queue="gpu")
print(json.dumps([predict.pk, evaluate.pk]))
"""
READ_JOBS = """
import json
from jobs.models import Job
print(json.dumps({{j.kind: [j.status, j.result, j.error] for j in Job.objects.filter(pk__in={ids})}}))
"""


def test_bin_worker_gpu_takes_a_prediction_and_a_study_evaluation(spread_nli, tmp_path):
    pairs = write_pairs_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps(
                {"uid": f"g{i}", "example": {"premise": p, "hypothesis": h}, "label_counter": {LABELS[i % 3][0]: 3}}
            )
            + "\n"
            for i, (p, h) in enumerate(PAIRS)
        )
    )
    # The database task backend over a SQLite file: the GPU machine has no PostgreSQL or Redis.
    env = {
        **{key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")},
        "DATABASE_URL": f"sqlite:///{tmp_path}/worker.sqlite3",
        "TASKS_BACKEND": "database",
        "NLI_STUDIO_VAR": str(tmp_path / "var"),
        "NLI_STUDIO_MODELS": str(spread_nli.parent),
        "PY": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    _django_command(env, "migrate", "--noinput", "-v0")
    queued = QUEUE_JOBS.format(predict=PREDICT, model=spread_nli, model_name=spread_nli.name, pairs=pairs, gold=gold)
    ids = json.loads(_django_command(env, "shell", "-c", queued).strip().splitlines()[-1])
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [str(REPO / "bin" / "worker"), "gpu"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WORKER_SECONDS
        while True:
            jobs = json.loads(_django_command(env, "shell", "-c", READ_JOBS.format(ids=ids)).strip().splitlines()[-1])
            if all(status in ("done", "failed", "cancelled") for status, _, _ in jobs.values()):
                break
            assert worker.poll() is None, f"bin/worker gpu exited: {(tmp_path / 'worker.log').read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"jobs still {jobs} after {WORKER_SECONDS} s"
            time.sleep(2)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
    predicted, evaluated = jobs[PREDICT], jobs["evaluate_study"]
    assert predicted[0] == "done", predicted[2]
    assert evaluated[0] == "done", evaluated[2]
    assert predicted[1]["device"] == "cuda" and predicted[1]["precision"] == "bf16"
    assert predicted[1]["rows"] == len(PAIRS)
    (figures,) = evaluated[1]["models"].values()
    assert figures["device"].startswith("cuda") and 0 <= figures["majority_acc"] <= 1
    assert evaluated[1]["reference"]["items"] == len(PAIRS)
