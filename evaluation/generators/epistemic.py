"""Epistemic closure filters: NLI pairs embedded under attitude verbs ("NAME VERB that X").

From an SNLI pair (X, Y, label) each filter builds a new pair and a new label:
  control                  X / Y                                       same label
  single_agent             NAME VERB that x / NAME VERB that y         same label
  anaphora                 NAME VERB that x / PRONOUN VERB that y      same label
  multi_agent_factive      NAME1 FACTIVE that x / NAME2 FACTIVE that y  N->N, E->N, C->C
  multi_agent_non_factive  NAME1 NONFACT that x / NAME2 NONFACT that y  always N
(x, y: X and Y with the first letter lowercased; one verb per pair, the same in premise and hypothesis.)

The paper keeps only S-rooted premises and hypotheses. SNLI's gold-only JSONL has no parses, so
`is_full_sentence` stands in for the parser; see its docstring.
"""

import random
import re

from evaluation.readers import NLI_LABELS

TEMPLATES = ("control", "single_agent", "anaphora", "multi_agent_factive", "multi_agent_non_factive")

FACTIVE_VERBS = ("knows", "sees", "learns", "understands", "recognizes", "remembers")
NON_FACTIVE_VERBS = ("believes", "thinks", "assumes", "suspects")

# 10 female and 10 male given names common in the US, each with the pronoun that refers to it.
NAMES = {
    "Mary": "she",
    "Linda": "she",
    "Susan": "she",
    "Karen": "she",
    "Lisa": "she",
    "Emily": "she",
    "Sarah": "she",
    "Laura": "she",
    "Anna": "she",
    "Rachel": "she",
    "James": "he",
    "John": "he",
    "Robert": "he",
    "Michael": "he",
    "David": "he",
    "Daniel": "he",
    "Thomas": "he",
    "Mark": "he",
    "Paul": "he",
    "Steven": "he",
}

_SAME = {label: label for label in NLI_LABELS}
LABEL_TABLE = {
    "control": _SAME,
    "single_agent": _SAME,
    "anaphora": _SAME,
    "multi_agent_factive": {"neutral": "neutral", "entailment": "neutral", "contradiction": "contradiction"},
    "multi_agent_non_factive": dict.fromkeys(NLI_LABELS, "neutral"),
}

# Finite forms only: SNLI fragments ("Two dogs running in the snow.") use bare participles instead.
FINITE_VERBS = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "am",
        "has",
        "have",
        "had",
        "does",
        "do",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "may",
        "might",
        "must",
    ]
)


def is_full_sentence(text: str) -> bool:
    """Heuristic stand-in for "the parse is S-rooted".

    True when the text starts with a capital letter, ends with a period and has no other sentence
    punctuation (one sentence, not two), and contains a finite auxiliary or copula from FINITE_VERBS
    that does not follow "to" ("to be", "to do" are not finite). It misses sentences whose only verb is a
    simple present or past form ("A man sits."), which is acceptable: it only needs to find enough clean
    sentences, and it rejects the participle fragments typical of SNLI.
    """
    text = text.strip()
    if not text or not text[0].isupper() or not text.endswith(".") or re.search(r"[.!?]", text[:-1]):
        return False
    words = re.findall(r"[a-z']+", text.lower())
    return any(word in FINITE_VERBS and (i == 0 or words[i - 1] != "to") for i, word in enumerate(words))


def embedded(text: str) -> str:
    """The sentence as a complement clause: first letter lowercased, except for "I" and acronyms."""
    text = text.strip()
    first_word = text.split()[0]
    if first_word == "I" or (len(first_word) > 1 and first_word.isupper()):
        return text
    return text[0].lower() + text[1:]


def apply_filter(template: str, premise: str, hypothesis: str, rng: random.Random) -> tuple[str, str]:
    """(premise, hypothesis) after the named filter, names and verbs drawn from `rng`."""
    if template == "control":
        return premise, hypothesis
    x, y = embedded(premise), embedded(hypothesis)
    if template in ("single_agent", "anaphora"):
        name = rng.choice(list(NAMES))
        verb = rng.choice(FACTIVE_VERBS + NON_FACTIVE_VERBS)
        subject = NAMES[name].capitalize() if template == "anaphora" else name
        return f"{name} {verb} that {x}", f"{subject} {verb} that {y}"
    verbs = FACTIVE_VERBS if template == "multi_agent_factive" else NON_FACTIVE_VERBS
    first, second = rng.sample(list(NAMES), 2)
    verb = rng.choice(verbs)
    return f"{first} {verb} that {x}", f"{second} {verb} that {y}"


def generate_epistemic(pairs: list[dict], per_template: int, seed: int) -> list[dict]:
    """Rows {"id", "premise", "hypothesis", "label", "original_label", "template"}: `per_template` rows for
    every template and original label (15 cells), drawn without replacement within a cell from the
    `pairs` ({"premise", "hypothesis", "label"}, labels as full names) whose premise and hypothesis are
    both full sentences. Raises ValueError when a label has too few such pairs."""
    rng = random.Random(seed)
    pools = {label: [] for label in NLI_LABELS}
    for pair in pairs:
        if pair["label"] in pools and is_full_sentence(pair["premise"]) and is_full_sentence(pair["hypothesis"]):
            pools[pair["label"]].append(pair)
    for label, pool in pools.items():
        if len(pool) < per_template:
            raise ValueError(f"only {len(pool)} full-sentence pairs labelled {label}; {per_template} needed")
    rows = []
    for template in TEMPLATES:
        for label in NLI_LABELS:
            for number, pair in enumerate(rng.sample(pools[label], per_template)):
                premise, hypothesis = apply_filter(template, pair["premise"].strip(), pair["hypothesis"].strip(), rng)
                rows.append(
                    {
                        "id": f"{template}-{label}-{number}",
                        "premise": premise,
                        "hypothesis": hypothesis,
                        "label": LABEL_TABLE[template][label],
                        "original_label": label,
                        "template": template,
                    }
                )
    return rows
