"""U-SNLI slider: k premise-hypothesis pairs per page, each a probability on a logistic slider.

The page sends the raw position 0..10000; the server alone maps it to a probability.
"""

import math
from collections.abc import Sequence
from statistics import median

from annotation.tasktypes.base import (
    Aggregate,
    AnswerError,
    TaskType,
    require_int,
    require_probability,
)
from annotation.tasktypes.demo_text import scene_demo
from common.schema import Setting
from common.vocabulary import LONG_NAMES

MAX_POSITION = 10000
DEFAULT_MIN_DELTA = 0.01  # the closest an easy item's answer must come, whatever its reference
LOW_STEEPNESS = 0.3  # below the midpoint: fine resolution near 0
HIGH_STEEPNESS = 0.02  # above the midpoint: almost linear
# Probabilities marked under the slider track, placed through the position -> probability map.
TICK_PROBABILITIES = (0, 0.01, 0.1, 0.5, 0.9, 0.99, 1)
DEFAULT_TICK_LABELS = "never,1%,10%,50%,90%,99%,sure"


def _logistic(t: float, steepness: float) -> float:
    return 1.0 / (1.0 + math.exp(-steepness * t))


_LOW_FLOOR = _logistic(-50, LOW_STEEPNESS)
_HIGH_CEILING = _logistic(50, HIGH_STEEPNESS)


def position_to_probability(position: int) -> float:
    """Piecewise logistic map of the U-SNLI collection template; 0, 5000, 10000 -> 0, 0.5, 1."""
    t = position / 100 - 50
    if t <= 0:
        return (_logistic(t, LOW_STEEPNESS) - _LOW_FLOOR) / (0.5 - _LOW_FLOOR) * 0.5
    return 0.5 + (_logistic(t, HIGH_STEEPNESS) - 0.5) / (_HIGH_CEILING - 0.5) * 0.5


def probability_to_position(probability: float) -> int:
    """The first position whose probability reaches `probability` (the map is increasing)."""
    low, high = 0, MAX_POSITION
    while low < high:
        middle = (low + high) // 2
        if position_to_probability(middle) < probability:
            low = middle + 1
        else:
            high = middle
    return low


def _check_tick_labels(text: str) -> None:
    labels = [label.strip() for label in text.split(",")]
    if len(labels) != len(TICK_PROBABILITIES) or not all(labels):
        raise ValueError(
            f"give {len(TICK_PROBABILITIES)} labels separated by commas, one for each of "
            f"{', '.join(str(p) for p in TICK_PROBABILITIES)}"
        )
    if any(len(label) > 8 for label in labels):
        raise ValueError("each label must be at most 8 characters (they sit side by side on a phone)")


class UNLISlider(TaskType):
    name = "unli_slider"
    label = "Probability slider (U-SNLI)"
    agreement_level = "interval"
    default_items_per_page = 5
    probability_answers = True
    aggregation = "median"
    answer_help = "the raw slider position, a whole number from 0 to 10000"
    settings = (
        Setting(
            "disagreement_positions",
            "int",
            2000,
            "two answers further apart than this many slider positions (of 10,000) call for one more annotation",
            minimum=0,
            maximum=MAX_POSITION,
        ),
        Setting(
            "tick_labels",
            "str",
            DEFAULT_TICK_LABELS,
            "the short labels under the slider, one for each of the "
            "probabilities 0, 0.01, 0.1, 0.5, 0.9, 0.99 and 1, separated by commas",
            max_length=80,
            check=_check_tick_labels,
            worker_visible=True,
        ),
        Setting(
            "allow_untouched",
            "bool",
            False,
            "a slider the worker never moved may be submitted (as 0.5); "
            "otherwise every slider must be set before the page can be sent",
            label="Allow untouched sliders",
            worker_visible=True,
        ),
        Setting(
            "adaptive",
            "bool",
            False,
            "EASL-style pages: after a first round, serve the items whose probability is most uncertain first",
            label="Adaptive pages",
            column=True,
        ),
    )
    # How the slider reads (its stretched scale) is the widget's: the author cannot change what it does.
    guidance = (
        "For each pair, imagine the situation the premise describes. How likely is it that the hypothesis is "
        "true in it? Move the slider: the left end is impossible, the middle an even chance, the right end "
        'certain. The scale is stretched near zero so you can tell "1 in 100" from "1 in 10,000".\n\n'
        "Compare the pairs on the page with each other: a likelier hypothesis should sit further right."
    )

    def parse_answer(self, answer, options):
        position = require_int(answer, "value", 0, MAX_POSITION)
        return {"position": position}, position_to_probability(position)

    def example_answers(self, options):
        return [0, MAX_POSITION // 2, MAX_POSITION, probability_to_position(0.9), str(probability_to_position(0.05))]

    def difference_axis(self, options):
        return "mean absolute difference between two annotators' probabilities", (0.0, 1.0)

    def parse_reference(self, value, options):
        return require_probability(value)

    def gold_reference(self, example, atom, options):
        try:
            return require_probability(example.source_probability)
        except AnswerError:
            return None

    def export_fields(self, raw, value, options):
        return {"position": raw.get("position") if isinstance(raw, dict) else None, "probability": value}

    def disagree(self, raws, values, options):
        positions = [raw["position"] for raw in raws]
        return max(positions) - min(positions) > options.get("disagreement_positions", 2000)

    def aggregate(self, values, options):
        return Aggregate(median(values) if values else None)

    def tolerance(self, reference, rules=None) -> float:
        """How close an answer must come: min(y, 1-y) / 4 of the reference y (U-SNLI's rule: tight near 0 and 1,
        loose in the middle), but at least the test's min_delta, or a reference of 0 would take exactly 0."""
        divisor = getattr(rules, "delta_divisor", 4.0)
        return max(min(reference, 1 - reference) / divisor, getattr(rules, "min_delta", DEFAULT_MIN_DELTA))

    def matches_reference(self, value, reference, rules=None):
        return abs(value - reference) <= self.tolerance(reference, rules)

    qualification_score = "correlation (Pearson r) of your answers with the reference answers"

    def grade(self, answers, references, easy, rules):
        """Easy items each within delta of their reference, and Pearson r and Spearman rho over all items
        above the test's thresholds (U-SNLI's qualification rules)."""
        # Imported here, not at the top: scipy costs seconds of start-up for every command.
        from metrics.regression import unli_scores

        unmet = [
            f"An easy item (reference {r:.3g}) needs an answer within {self.tolerance(r, rules):.3g} of it; "
            f"yours was {a:.3g}."
            for a, r, e in zip(answers, references, easy)
            if e and not self.matches_reference(a, r, rules)
        ]
        easy_ok = not unmet
        pearson = spearman = float("nan")
        if len(answers) >= 3 and len(set(answers)) > 1 and len(set(references)) > 1:
            scores = unli_scores(references, answers)
            pearson, spearman = scores["pearson"], scores["spearman"]
        if math.isnan(pearson):
            unmet.append("Your answers must vary from item to item for their correlation to be computed.")
        else:
            if not pearson > rules.min_pearson:
                unmet.append(
                    f"The correlation of your answers with the references (Pearson r) is {pearson:.2f}; "
                    f"it must be above {rules.min_pearson:.2f}."
                )
            if not spearman > rules.min_spearman:
                unmet.append(
                    f"The rank correlation (Spearman rho) is {spearman:.2f}; it must be above {rules.min_spearman:.2f}."
                )
        passed = not unmet
        return passed, {
            "unmet": unmet,
            "score": None if math.isnan(pearson) else pearson,
            "pass_mark": rules.min_pearson,
            "easy_items_within_delta": easy_ok,
            "pearson": None if math.isnan(pearson) else pearson,
            "spearman": None if math.isnan(spearman) else spearman,
            "min_pearson": rules.min_pearson,
            "min_spearman": rules.min_spearman,
        }

    def order_page(self, items):
        # Pairs sharing a premise sit together: seeing them side by side calibrates the judgments.
        first_seen = {}
        for index, item in enumerate(items):
            first_seen.setdefault(item.example.premise, index)
        return sorted(items, key=lambda item: first_seen[item.example.premise])

    def widget_context(self, options):
        labels = [label.strip() for label in options.get("tick_labels", DEFAULT_TICK_LABELS).split(",")]
        # Three staggered rows: 1%, 10% and 50% sit close together on the track, and so do 90%, 99% and 1.
        ticks = [
            {
                "percent": round(probability_to_position(p) / MAX_POSITION * 100, 2),
                "label": label,
                "probability": p,
                "row": index % 3,
            }
            for index, (p, label) in enumerate(zip(TICK_PROBABILITIES, labels))
        ]
        return {
            **super().widget_context(options),
            "reference_label": "Probability (0 to 1)",
            "ticks": ticks,
            "allow_untouched": bool(options.get("allow_untouched", False)),
            "max_position": MAX_POSITION,
        }

    def display(self, value, options):
        return "—" if value is None else f"{value:.4g}"

    def simulated_answer(self, item, worker_number, rng, options):
        # Around U-SNLI's class means (entailment high, contradiction near 0), spread on the logit scale.
        centre = {"e": 0.9, "n": 0.45, "c": 0.04}.get(item.example.source_label, 0.5)
        logit = math.log(centre / (1 - centre)) + rng.gauss(0, 0.8)
        return probability_to_position(1 / (1 + math.exp(-logit)))

    def report_plot(self, settled):
        known = []
        for _, source_label, _, value in settled:
            if source_label in LONG_NAMES:  # stored canonical: e, n or c
                known.append((LONG_NAMES[source_label], value))
        plot = {"title": "Slider probability by NLI label", "svg": None, "empty": None}
        if not known:
            plot["empty"] = "No settled item whose example has an NLI label (entailment, neutral, contradiction) yet."
        else:
            plot["svg"] = slider_by_label_svg([value for _, value in known], [label for label, _ in known])
        return plot

    def demo(self):
        return scene_demo(
            "demo-slider",
            "Demo: how likely is the hypothesis?",
            "Use the slider to say how likely each hypothesis is, given its premise.",
        )


def slider_by_label_svg(probabilities: Sequence[float], labels: Sequence[str]) -> str:
    """Box plot of slider probabilities per NLI label (as U-SNLI's Figure 5 shows its categories).

    probabilities: (n,) item probabilities in [0, 1]; labels: (n,) the item's NLI label as a long name
    (entailment, neutral, contradiction); items with another label are left out. The box
    spans the quartiles with the median marked; whiskers reach the 2nd and 98th percentiles (96% of items).
    """
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from common.plotting import ACCENT, ACCENT_LIGHT, figure_svg

    frame = pd.DataFrame({"p": np.asarray(probabilities, dtype=float), "name": list(labels)})
    present = [name for name in LONG_NAMES.values() if (frame["name"] == name).any()]
    groups = [frame.loc[frame["name"] == name, "p"].to_numpy() for name in present]

    figure = Figure(figsize=(6, 3.6))
    axes = figure.add_subplot()
    axes.boxplot(
        groups,
        whis=(2, 98),
        showfliers=False,
        patch_artist=True,
        boxprops={"facecolor": ACCENT_LIGHT, "edgecolor": ACCENT},
        medianprops={"color": ACCENT, "linewidth": 2},
        whiskerprops={"color": ACCENT},
        capprops={"color": ACCENT},
    )
    axes.set_xticks(range(1, len(present) + 1), [f"{name}\n(n={len(group)})" for name, group in zip(present, groups)])
    axes.set_ylim(-0.02, 1.02)
    axes.set_ylabel("probability (item label)")
    axes.set_title("Slider probability by NLI label")
    axes.grid(axis="y", alpha=0.3)
    return figure_svg(figure)


TASK = UNLISlider()
