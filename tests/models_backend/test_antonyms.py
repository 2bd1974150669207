import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import build_bert_classifier
from django.conf import settings
from django.core.management import CommandError, call_command

from models_backend.pipelines.antonyms import Embedder, rank_by_similarity, replacement_candidates
from models_backend.pipelines.wordnet import WordNet, WordNetError, inflect
from models_backend.registry import inspect_checkpoint, load_model
from models_backend.runner import predict_pairs

POS_NAMES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# (pos, offset, words, antonym pointers as (source word no, target offset, target pos, target word no))
SYNSETS = [
    ("n", "00000010", ["man"], [(1, "00000020", "n", 1)]),
    ("n", "00000020", ["woman"], [(1, "00000010", "n", 1)]),
    ("n", "00000030", ["bench", "seat"], []),
    ("v", "00000040", ["sleep", "kip"], [(1, "00000050", "v", 1)]),
    ("v", "00000050", ["wake"], [(1, "00000040", "v", 1)]),
    ("v", "00000060", ["sit", "sit_down"], [(1, "00000070", "v", 1)]),
    ("v", "00000070", ["stand", "stand_up"], [(1, "00000060", "v", 1)]),
    ("a", "00000080", ["happy"], [(1, "00000090", "a", 1)]),
    ("a", "00000090", ["unhappy", "sad(a)"], [(1, "00000080", "a", 1)]),
    ("a", "00000100", ["old"], [(1, "00000110", "a", 1)]),
    ("a", "00000110", ["young"], [(1, "00000100", "a", 1)]),
    ("r", "00000120", ["quickly"], [(1, "00000130", "r", 1)]),
    ("r", "00000130", ["slowly"], [(1, "00000120", "r", 1)]),
]


def write_wordnet(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lemmas = {pos: set() for pos in POS_NAMES}
    data = {pos: ["  1 This is a licence header line.\n"] for pos in POS_NAMES}
    for pos, offset, words, pointers in SYNSETS:
        word_part = " ".join(f"{w} 0" for w in words)
        pointer_part = " ".join(f"! {target} {tpos} {src:02x}{dst:02x}" for src, target, tpos, dst in pointers)
        data[pos].append(f"{offset} 00 {pos} {len(words):02x} {word_part} {len(pointers):03d} {pointer_part} | gloss\n")
        lemmas[pos].update(w.split("(")[0] for w in words)
    for pos, name in POS_NAMES.items():
        (folder / f"data.{name}").write_text("".join(data[pos]))
        (folder / f"index.{name}").write_text(
            "  1 licence\n" + "".join(f"{w} {pos} 1 0 1 0 00000000\n" for w in sorted(lemmas[pos]))
        )
    return folder


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory):
    return WordNet(write_wordnet(tmp_path_factory.mktemp("wordnet")))


def test_reader_resolves_antonyms_and_base_forms(wordnet):
    assert wordnet.antonyms("man", "n") == ["woman"]
    assert wordnet.antonyms("unhappy", "a") == ["happy"] and wordnet.antonyms("sad", "a") == []
    assert "sad" in wordnet.lemmas["a"]
    assert wordnet.antonyms("sit down", "v") == []
    assert wordnet.base_forms("sleeping", "v") == [("sleep", "ing")]
    assert wordnet.base_forms("men", "n") == [("man", "men")]
    assert wordnet.base_forms("bench", "v") == []


def test_inflection_carries_over():
    assert [inflect("wake", "ing"), inflect("stand", "s"), inflect("woman", "men"), inflect("sit", "ing")] == [
        "waking",
        "stands",
        "women",
        "sitting",
    ]


def test_candidates_replace_one_content_word(wordnet):
    sentences = {c.sentence for c in replacement_candidates("Men are sleeping quickly on an old bench.", wordnet)}
    assert sentences == {
        "Women are sleeping quickly on an old bench.",
        "Men are waking quickly on an old bench.",
        "Men are sleeping slowly on an old bench.",
        "Men are sleeping quickly on a young bench.",
    }
    assert {c.sentence for c in replacement_candidates("A young man", wordnet)} == {"An old man", "A young woman"}
    assert replacement_candidates("The bench.", wordnet) == []


def test_similarity_ranking_uses_the_embedder(wordnet, tiny_encoder):
    embedder = Embedder(tiny_encoder, torch.device("cpu"))
    candidates = replacement_candidates("a man is sleeping", wordnet)
    ranked = rank_by_similarity(candidates, embedder)
    scores = [float(embedder.embed([c.antonym])[0] @ embedder.embed([c.rest])[0]) for c in ranked]
    assert sorted(c.sentence for c in ranked) == sorted(c.sentence for c in candidates)
    assert scores == sorted(scores, reverse=True)


def test_make_antonym_pairs_end_to_end(wordnet, tiny_encoder, tiny_lm, tmp_path):
    nli = tmp_path / "nli"
    build_bert_classifier(nli, id2label={0: "contradiction", 1: "entailment", 2: "neutral"}, seed=5)
    source = tmp_path / "in.jsonl"
    rows = [
        {"id": "1", "premise": "a man is sitting on a bench", "hypothesis": "a man is sleeping"},
        {"id": "2", "premise": "a woman", "hypothesis": "the bench"},
        {"id": "3", "premise": "two people", "hypothesis": "people are happy"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(ratio):
        output = tmp_path / f"out-{ratio}.jsonl"
        call_command(
            "make_antonym_pairs",
            input=str(source),
            nli_model=str(nli),
            output=str(output),
            wordnet=str(wordnet.folder),
            embedder=str(tiny_encoder),
            scorer=str(tiny_lm),
            max_perplexity_ratio=ratio,
        )
        return [json.loads(line) for line in output.read_text().splitlines()]

    written = run(1e6)
    assert [r["id"] for r in written] == ["1", "3"]  # "the bench" has no antonym candidate
    assert written[1]["modified_hypothesis"] == "people are unhappy"
    assert written[0]["modified_hypothesis"] in {"a woman is sleeping", "a man is waking"}
    spec = inspect_checkpoint(nli)
    model, tokenizer = load_model(spec, torch.device("cpu"))
    for row in written:
        pairs = [
            (row["premise"], row["hypothesis"]),
            (row["hypothesis"], row["modified_hypothesis"]),
            (row["modified_hypothesis"], row["hypothesis"]),
            (row["premise"], row["modified_hypothesis"]),
        ]
        probabilities = predict_pairs(spec, model, tokenizer, [p for p, _ in pairs], [h for _, h in pairs])
        expected = [spec.label_names[i] for i in np.argmax(probabilities, axis=1)]
        assert [row["label_p_h"], row["label_h_m"], row["label_m_h"], row["label_p_m"]] == expected
    assert run(1e-6) == []  # no sentence beats a millionth of its original's perplexity


def test_missing_wordnet_points_to_installer(tiny_nli, tmp_path):
    with pytest.raises(WordNetError, match=r"wordnet_install\.sh"):
        WordNet(tmp_path)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "1", "premise": "a", "hypothesis": "b"}) + "\n")
    with pytest.raises(CommandError, match=r"lacks index\.noun"):
        call_command(
            "make_antonym_pairs",
            input=str(source),
            nli_model=str(tiny_nli),
            output=str(tmp_path / "o"),
            wordnet=str(tmp_path),
        )


REAL_WORDNET = Path(settings.WORDNET_DIR)


@pytest.mark.skipif(not (REAL_WORDNET / "data.noun").is_file(), reason="WordNet not installed (wordnet_install.sh)")
def test_real_wordnet_antonyms():
    wordnet = WordNet(REAL_WORDNET)
    assert "woman" in wordnet.antonyms("man", "n")
    sentences = {c.sentence for c in replacement_candidates("A man is sleeping outside.", wordnet)}
    assert {"A woman is sleeping outside.", "A man is waking outside.", "A man is sleeping inside."} <= sentences
