"""U-SNLI slider: k premise-hypothesis pairs per page, each a probability on a logistic slider.

The page sends the raw position 0..10000; the server alone maps it to a probability.
"""
import math
from statistics import median

from annotation.tasktypes.base import Aggregate, TaskType, require_int

MAX_POSITION = 10000
LOW_STEEPNESS = 0.3  # below the midpoint: fine resolution near 0
HIGH_STEEPNESS = 0.02  # above the midpoint: almost linear


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


class UNLISlider(TaskType):
    name = "unli_slider"
    label = "Probability slider (U-SNLI)"
    agreement_level = "interval"
    default_items_per_page = 5

    def default_options(self):
        return {"disagreement_positions": 2000}

    def parse_answer(self, answer, options):
        position = require_int(answer, "value", 0, MAX_POSITION)
        return {"position": position}, position_to_probability(position)

    def disagree(self, raws, values, options):
        positions = [raw["position"] for raw in raws]
        return max(positions) - min(positions) > options.get("disagreement_positions", 2000)

    def aggregate(self, values, options):
        return Aggregate(median(values) if values else None)

    def matches_reference(self, value, reference, delta_divisor=4.0):
        # Within min(y, 1-y) / 4 of the reference y: tight near 0 and 1, loose in the middle.
        return abs(value - reference) <= min(reference, 1 - reference) / delta_divisor


TASK = UNLISlider()
