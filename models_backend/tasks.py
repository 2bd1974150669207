"""The background task behind every model run (Django Tasks API). Send a run to GPU workers with the
queue "gpu" (runs.start_model_run(..., queue="gpu")); the worker uses the GPU when PyTorch sees one."""
from django_tasks import task

from models_backend import runs


@task()
def model_run_task(run_id: int) -> str:
    return runs.execute(run_id).status
