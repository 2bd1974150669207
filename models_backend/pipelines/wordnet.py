"""A small reader for WordNet's database files: lemmas per part of speech and direct antonym pointers.

Reads ``index.{noun,verb,adj,adv}`` and ``data.*`` from a WordNet dict folder (e.g. the one
``models_backend/wordnet_install.sh`` unpacks into var/wordnet/dict). Lemmatisation uses WordNet's own
suffix-detachment rules (morphy without the exception lists, which the npm package does not carry).
"""

import re
from collections import defaultdict
from pathlib import Path

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}

# morphy's detachment rules: (inflected suffix, base suffix), tried in order.
DETACHMENT_RULES = {
    "n": [
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}
ADJECTIVE_MARKER = re.compile(r"\((a|p|ip)\)$")


class WordNetError(Exception):
    """The WordNet folder is missing or incomplete."""


def _clean_lemma(word: str) -> str:
    return ADJECTIVE_MARKER.sub("", word).replace("_", " ").lower()


class WordNet:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        missing = [
            name
            for pos in POS_FILES.values()
            for name in (f"index.{pos}", f"data.{pos}")
            if not (self.folder / name).is_file()
        ]
        if missing:
            raise WordNetError(
                f"WordNet folder {self.folder} lacks {', '.join(missing)}; "
                "run `sh models_backend/wordnet_install.sh` to install it"
            )
        self.lemmas: dict[str, set[str]] = {pos: set() for pos in POS_FILES}
        self._antonyms: dict[tuple[str, str], set[str]] = defaultdict(set)
        for pos, name in POS_FILES.items():
            self._read_index(pos, self.folder / f"index.{name}")
        self._read_antonyms()

    def _read_index(self, pos: str, path: Path) -> None:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(" "):  # licence header lines start with spaces
                    continue
                self.lemmas[pos].add(_clean_lemma(line.split(" ", 1)[0]))

    def _read_antonyms(self) -> None:
        """Resolve '!' pointers (lexical: source word -> target word in the target synset)."""
        words: dict[tuple[str, str], list[str]] = {}
        pointers = []
        for pos, name in POS_FILES.items():
            with (self.folder / f"data.{name}").open(encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith(" "):
                        continue
                    fields = line.split(" | ", 1)[0].split()
                    word_count = int(fields[3], 16)
                    synset_words = [_clean_lemma(w) for w in fields[4 : 4 + 2 * word_count : 2]]
                    words[(pos, fields[0])] = synset_words
                    at = 4 + 2 * word_count
                    for k in range(int(fields[at])):
                        symbol, offset, target_pos, source_target = fields[at + 1 + 4 * k : at + 5 + 4 * k]
                        if symbol == "!":
                            pointers.append(
                                (pos, synset_words, source_target, "a" if target_pos == "s" else target_pos, offset)
                            )
        for pos, synset_words, source_target, target_pos, offset in pointers:
            source, target = int(source_target[:2], 16), int(source_target[2:], 16)
            targets = words.get((target_pos, offset))
            if not targets or not source or not target:
                continue
            self._antonyms[(synset_words[source - 1], pos)].add(targets[target - 1])

    def base_forms(self, word: str, pos: str) -> list[tuple[str, str]]:
        """(lemma, inflection) pairs for ``word`` as ``pos``; inflection is '' for the base form itself,
        else the detached suffix ('s', 'ing', 'ed', 'er', 'est', 'men')."""
        word = word.lower()
        found = [(word, "")] if word in self.lemmas[pos] else []
        for suffix, base in DETACHMENT_RULES[pos]:
            if word.endswith(suffix) and (len(word) > len(suffix) or base):
                lemma = word[: -len(suffix)] + base
                inflection = "s" if suffix in ("ses", "xes", "zes", "ches", "shes", "ies", "es") else suffix
                if lemma in self.lemmas[pos] and (lemma, inflection) not in found and lemma != word:
                    found.append((lemma, inflection))
        return found

    def antonyms(self, lemma: str, pos: str) -> list[str]:
        """Direct antonyms of ``lemma`` with the same part of speech, sorted."""
        return sorted(self._antonyms.get((lemma.lower(), pos), ()))


VOWELS = set("aeiou")
# One-syllable words ending consonant-vowel-consonant double the last consonant: sit -> sitting.
DOUBLES_FINAL = re.compile(r"^[^aeiou]*[aeiou][bdgklmnprt]$")


def inflect(lemma: str, inflection: str) -> str:
    """Apply an inflection detached by ``WordNet.base_forms`` to another lemma (regular English spelling)."""
    if not inflection:
        return lemma
    if inflection == "men":
        return lemma[:-3] + "men" if lemma.endswith("man") else lemma + "s"
    consonant_y = lemma.endswith("y") and len(lemma) > 1 and lemma[-2] not in VOWELS
    if inflection == "s":
        if lemma.endswith(("s", "x", "z", "ch", "sh")):
            return lemma + "es"
        return lemma[:-1] + "ies" if consonant_y else lemma + "s"
    if inflection in ("ing", "ed", "er", "est") and DOUBLES_FINAL.match(lemma):
        lemma += lemma[-1]
    if inflection == "ing":
        if lemma.endswith("ie"):
            return lemma[:-2] + "ying"
        if lemma.endswith("e") and not lemma.endswith(("ee", "ye", "oe")):
            return lemma[:-1] + "ing"
        return lemma + "ing"
    # ed, er, est all drop a final e and turn a consonant + y into i.
    if lemma.endswith("e"):
        return lemma + inflection[1:]
    return (lemma[:-1] + "i" + inflection) if consonant_y else lemma + inflection
