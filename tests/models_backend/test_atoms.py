import json

import torch
from conftest import PAIRS, build_bert_classifier, build_gpt2, force_label, write_pairs_jsonl
from django.core.management import call_command
from transformers import GPT2LMHeadModel

from models_backend.pipelines.atoms import AtomPrompt, parse_atoms


def rig_lm_to_repeat(folder, token_id):
    """Make the tiny GPT-2 emit ``token_id`` forever: constant final hidden state, untied head."""
    model = GPT2LMHeadModel.from_pretrained(folder, local_files_only=True)
    model.config.tie_word_embeddings = False
    with torch.no_grad():
        model.lm_head.weight = torch.nn.Parameter(torch.zeros_like(model.lm_head.weight))
        model.lm_head.weight[token_id] = 1.0
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.fill_(1.0)
    model.save_pretrained(folder)


def test_parse_atoms_reads_the_leading_bullet_list():
    text = "- A man sleeps.\n* The man is old.\n2) He is on a bench.\n- A man sleeps.\n\nSentence: next\n- no"
    assert parse_atoms(text) == ["A man sleeps.", "The man is old.", "He is on a bench."]
    assert parse_atoms("\n\n- first\nnot a bullet\n- second") == ["first"]
    assert parse_atoms("nothing here") == []


def test_prompt_renders_exemplars_then_the_hypothesis():
    prompt = AtomPrompt(instruction="Split.\n\n", exemplars=[("A red hat.", ["A hat.", "It is red."])])
    assert (
        prompt.render("A dog runs.")
        == "Split.\n\nSentence: A red hat.\nFacts:\n- A hat.\n- It is red.\n\nSentence: A dog runs.\nFacts:\n"
    )


def test_generate_atoms_end_to_end(tmp_path):
    lm = tmp_path / "lm"
    _, tokenizer = build_gpt2(lm)
    rig_lm_to_repeat(lm, tokenizer.convert_tokens_to_ids("-"))
    entails = tmp_path / "entails"
    build_bert_classifier(entails)
    force_label(entails, 0)
    neutral = tmp_path / "neutral"
    build_bert_classifier(neutral)
    force_label(neutral, 1)
    source = write_pairs_jsonl(tmp_path / "in.jsonl", [*PAIRS[:3], PAIRS[0]], id_prefix="ex")

    def run(nli, defeasible):
        output = tmp_path / f"atoms-{nli.name}-{defeasible}.jsonl"
        call_command(
            "generate_atoms",
            lm=str(lm),
            nli_model=str(nli),
            input=str(source),
            output=str(output),
            defeasible=defeasible,
            max_new_tokens=8,
        )
        return [json.loads(line) for line in output.read_text().splitlines()]

    kept = run(entails, False)
    assert [row["example_id"] for row in kept] == ["ex0", "ex1", "ex2", "ex3"]
    assert all(row["atoms"] == ["- - - - - - -"] for row in kept)
    assert all(row["atoms"] == [] for row in run(neutral, False))
    # The premise entails every atom too, so the defeasible rule drops them all.
    assert all(row["atoms"] == [] for row in run(entails, True))
