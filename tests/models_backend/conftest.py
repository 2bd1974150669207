"""Tiny local checkpoints built by the tests themselves (no downloads): a BERT classifier and a GPT-2 LM; and
what the model pages' tests share: the media folder, the shared models folder, a slider study's U-SNLI rows."""

import csv
import io
import json
import shutil

import pytest
import torch
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
)

WORDS = [
    "a",
    "an",
    "the",
    "man",
    "woman",
    "men",
    "women",
    "child",
    "dog",
    "cat",
    "is",
    "are",
    "was",
    "sleeping",
    "waking",
    "sitting",
    "standing",
    "lying",
    "on",
    "in",
    "at",
    "park",
    "bench",
    "street",
    "happy",
    "unhappy",
    "sad",
    "good",
    "bad",
    "old",
    "young",
    "new",
    "tall",
    "short",
    "big",
    "small",
    "fast",
    "slow",
    "slowly",
    "quickly",
    "red",
    "blue",
    "shirt",
    "hat",
    "plays",
    "playing",
    "guitar",
    "runs",
    "running",
    "walks",
    "walking",
    "outside",
    "inside",
    "people",
    "two",
    "three",
    "sentence",
    "facts",
    "fact",
    "premise",
    "hypothesis",
    "answer",
    "question",
    "given",
    "true",
    "false",
    "possibly",
    "or",
    "neutral",
    "entailment",
    "contradiction",
    "break",
    "each",
    "into",
    "its",
    "short",
    "one",
    "thing",
    "says",
    "nothing",
    "does",
    "not",
    "it",
    "and",
    "that",
    "state",
    "sentences",
    "atomic",
    "of",
    "with",
]
PUNCTUATION = list(".,:?!-'\"()")
LETTERS = list("abcdefghijklmnopqrstuvwxyz") + list("ABCDEFGHIJ")


def write_bert_tokenizer(folder):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + sorted(set(WORDS)) + PUNCTUATION + LETTERS + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    tokenizer = BertTokenizer(vocab=str(vocab_file), do_lower_case=True)
    tokenizer.save_pretrained(folder)
    return tokenizer


def build_bert_classifier(folder, num_labels=3, id2label=None, seed=0, extra_config=None, initializer_range=0.5):
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = write_bert_tokenizer(folder)
    id2label = id2label or {0: "entailment", 1: "neutral", 2: "contradiction"}
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=num_labels,
        initializer_range=initializer_range,
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
        **(extra_config or {}),
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    model.save_pretrained(folder)
    return model, tokenizer


def build_unli_regressor(folder, seed=0):
    """A tiny probability (UNLI) checkpoint: one output, read through a sigmoid."""
    return build_bert_classifier(
        folder, num_labels=1, id2label={0: "probability"}, seed=seed, extra_config={"nli_studio_output": "sigmoid"}
    )


def build_bert_encoder(folder, seed=0):
    """A BertModel folder without a head, like the packaged MiniLM."""
    from transformers import BertModel

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = write_bert_tokenizer(folder)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    return folder


def build_gpt2(folder, seed=0):
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {
        token: i
        for i, token in enumerate(
            dict.fromkeys(["<|endoftext|>", "<unk>", "\n"] + WORDS + PUNCTUATION + [c.lower() for c in LETTERS])
        )
    }
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.normalizer = normalizers.Lowercase()
    # Keep newlines as tokens (prompts and generated lists are line-based); drop other whitespace.
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[ \t]+"), behavior="removed"),
            pre_tokenizers.Split("\n", behavior="isolated"),
            pre_tokenizers.Punctuation(),
        ]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    tokenizer.save_pretrained(folder)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=512,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    model.save_pretrained(folder)
    return model, tokenizer


def force_label(folder, index):
    """Rewrite a tiny classifier so it always predicts label ``index`` (zero head weights, large bias)."""
    model = BertForSequenceClassification.from_pretrained(folder, local_files_only=True)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[index] = 10.0
    model.save_pretrained(folder)


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_nli")
    build_bert_classifier(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_lm")
    build_gpt2(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory):
    return build_bert_encoder(tmp_path_factory.mktemp("tiny_encoder"))


PAIRS = [
    ("a man is sleeping on the bench", "a man is waking"),
    ("two dogs are running in the park", "dogs are outside"),
    ("a woman in a red hat plays the guitar", "a woman plays"),
    ("the child is happy", "the child is sad and it is not a good thing at all in the park"),
    ("old people are sitting", "people are sitting on a bench in the street"),
    ("a cat", "a small cat is lying"),
    ("three men walk slowly on the street with a dog and a cat", "men walk"),
]


def write_pairs_jsonl(path, pairs=PAIRS, id_prefix="p"):
    with path.open("w") as handle:
        for i, (premise, hypothesis) in enumerate(pairs):
            handle.write(json.dumps({"id": f"{id_prefix}{i}", "premise": premise, "hypothesis": hypothesis}) + "\n")
    return path


def import_usnli_pairs(study, pairs, probability):
    """Import `pairs` into a slider study through the U-SNLI importer, as rows u0, u1, ... whose gold
    probability is the text `probability(i)`."""
    from dataset_io.services.importers import import_stream

    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["id", "pre", "hyp", "nli", "unli"])
    for i, (premise, hypothesis) in enumerate(pairs):
        writer.writerow([f"u{i}", premise, hypothesis, "1", probability(i)])
    import_stream(study, io.StringIO(rows.getvalue()), "usnli")


@pytest.fixture
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def models_dir(settings, tmp_path, tiny_nli):
    """The shared models folder the model jobs offer: a tiny encoder (a training base), the tiny NLI
    classifier and a tiny LM."""
    folder = tmp_path / "models"
    build_bert_encoder(folder / "tiny-encoder")
    shutil.copytree(tiny_nli, folder / "tiny-nli")
    build_gpt2(folder / "tiny-lm")
    settings.MODELS_DIR = folder
    return folder


@pytest.fixture
def evaluation_models(settings, tmp_path):
    """The shared models folder the study evaluation offers: two NLI classifiers (nli-a, nli-b), one whose
    labels map to no study's (odd-labels) and a defeasible one (another protocol's kind)."""
    folder = tmp_path / "models"
    build_bert_classifier(folder / "nli-a", seed=1)
    build_bert_classifier(folder / "nli-b", seed=2)
    build_bert_classifier(folder / "odd-labels", id2label={0: "yes", 1: "no", 2: "maybe"})
    build_bert_classifier(folder / "defeasible", num_labels=2, id2label={0: "strengthener", 1: "weakener"})
    settings.MODELS_DIR = folder
    return folder


@pytest.fixture
def slider_study(make_project, author):
    """A slider study `slider` of PAIRS with imported gold probabilities."""
    study = make_project("unli_slider", slug="slider", owner=author)
    import_usnli_pairs(study, PAIRS, lambda i: f"{(i % 5) / 5 + 0.1:.2f}")
    return study
