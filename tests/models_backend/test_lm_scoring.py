import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from models_backend.lm_scoring import ChoicePrompt, score_choices, sentence_perplexities


def reference_nll(model, tokenizer, context, continuation):
    """NLL of the continuation from one unbatched forward pass over context + continuation."""
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    continuation_ids = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([context_ids + continuation_ids])
    with torch.no_grad():
        log_probs = torch.log_softmax(model(input_ids=ids).logits[0], -1)
    return -sum(float(log_probs[len(context_ids) - 1 + k, token]) for k, token in enumerate(continuation_ids))


@pytest.fixture(scope="module")
def lm(tiny_lm):
    return (
        AutoModelForCausalLM.from_pretrained(tiny_lm, local_files_only=True).eval(),
        AutoTokenizer.from_pretrained(tiny_lm, local_files_only=True),
    )


def test_choice_is_lowest_nll_and_distribution_sums_to_one(lm):
    model, tokenizer = lm
    prompt = ChoicePrompt()
    premises = ["a man is sleeping on the bench", "two dogs are running", "the child is happy"]
    hypotheses = ["a man is waking", "dogs are outside", "the child is sad"]
    scores = score_choices(model, tokenizer, premises, hypotheses, prompt, batch_size=2)
    assert scores.distributions.shape == (3, 3)
    np.testing.assert_allclose(scores.distributions.sum(axis=1), 1.0, atol=1e-9)
    for i, (premise, hypothesis) in enumerate(zip(premises, hypotheses)):
        context = prompt.context(premise, hypothesis)
        nll = [reference_nll(model, tokenizer, context, prompt.continuation(k)) for k in range(3)]
        np.testing.assert_allclose(-scores.log_likelihoods[i], nll, atol=1e-4)
        assert scores.choices[i] == int(np.argmin(nll))
        expected = np.exp(-np.array(nll)) / np.exp(-np.array(nll)).sum()
        np.testing.assert_allclose(scores.distributions[i], expected, atol=1e-6)


def test_prompt_lists_options_as_letters_and_validates_template():
    prompt = ChoicePrompt(exemplars=[])
    text = prompt.context("P.", "H.")
    assert "A. entailment\nB. neutral\nC. contradiction" in text
    assert text.startswith("Premise: P.") and prompt.continuation(2) == " C"
    two_way = ChoicePrompt(template="{premise} ? {hypothesis}\n{options}\nAnswer:", options=("yes", "no"), exemplars=[])
    assert two_way.context("p", "h") == "p ? h\nA. yes\nB. no\nAnswer:"
    with pytest.raises(ValueError, match=r"\{options\}"):
        ChoicePrompt(template="{premise} {hypothesis}")
    with pytest.raises(ValueError, match="not among the options"):
        ChoicePrompt(options=("yes", "no"))


def test_perplexity_is_exp_of_mean_nll(lm):
    model, tokenizer = lm
    sentence = "a man is sleeping"
    ids = tokenizer(sentence, add_special_tokens=False)["input_ids"]
    nll = reference_nll(model, tokenizer, tokenizer.eos_token, sentence)
    assert sentence_perplexities(model, tokenizer, [sentence])[0] == pytest.approx(np.exp(nll / len(ids)), rel=1e-4)
