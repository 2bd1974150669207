"""Background versions of the long model jobs (Django Tasks API), each calling the same service as its command.

Arguments are JSON-friendly (paths as strings, UNLI settings as a dict) so any backend can queue them;
each returns its service's summary dict. Progress goes to the ``models_backend.tasks`` logger at every
tenth of the work. Send a job to a GPU worker with ``predict_task.using(queue_name="gpu").enqueue(...)``.
"""
import logging

from django_tasks import TaskContext, task

from .pipelines.antonyms import make_antonym_pairs_file
from .pipelines.atoms import generate_atoms_file
from .prediction import predict_file
from .training.unli import UnliSettings, train_unli

logger = logging.getLogger(__name__)


def logging_progress(context: TaskContext, job: str):
    """A ``progress(done, total)`` callback that logs each new tenth of the work under the task's id."""
    last_tenth = -1

    def progress(done: int, total: int) -> None:
        nonlocal last_tenth
        tenth = done * 10 // max(total, 1)
        if tenth != last_tenth:
            last_tenth = tenth
            logger.info("%s %s: %d/%d", job, context.task_result.id, done, total)

    return progress


@task(takes_context=True)
def predict_task(context: TaskContext, model_dir: str, input_path: str, output_path: str, output_format: str = "jsonl",
                 batch_size: int = 64, device: str | None = None, kind: str | None = None) -> dict:
    return predict_file(model_dir, input_path, output_path, output_format=output_format, batch_size=batch_size,
                        device=device, kind=kind, progress=logging_progress(context, "predict"))


@task(takes_context=True)
def train_unli_task(context: TaskContext, output_dir: str, train_path: str, eval_path: str, settings: dict,
                    base: str | None = None, device: str | None = None) -> dict:
    return train_unli(output_dir, train_path, eval_path, UnliSettings(**settings), base=base, device=device,
                      progress=logging_progress(context, "train_unli"))


@task(takes_context=True)
def generate_atoms_task(context: TaskContext, lm_dir: str, nli_dir: str, input_path: str, output_path: str,
                        defeasible: bool = False, device: str | None = None) -> dict:
    return generate_atoms_file(lm_dir, nli_dir, input_path, output_path, defeasible=defeasible, device=device,
                               progress=logging_progress(context, "generate_atoms"))


@task(takes_context=True)
def make_antonym_pairs_task(context: TaskContext, input_path: str, nli_dir: str, output_path: str, wordnet_dir: str,
                            embedder_dir: str | None = None, scorer_dir: str | None = None,
                            device: str | None = None) -> dict:
    return make_antonym_pairs_file(input_path, nli_dir, output_path, wordnet_dir, embedder_dir=embedder_dir,
                                   scorer_dir=scorer_dir, device=device,
                                   progress=logging_progress(context, "make_antonym_pairs"))
