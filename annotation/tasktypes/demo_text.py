"""Demo text written for this project (not taken from any dataset), shared by the task types' demo projects.

The text itself lives in demo_text.json: it is data, and keeping it out of the code keeps each task type's
demo() down to its title, instructions and which rows it imports."""

import json
from functools import cache
from pathlib import Path

from annotation.tasktypes.base import DemoProject


@cache
def demo_text() -> dict:
    return json.loads((Path(__file__).with_name("demo_text.json")).read_text(encoding="utf-8"))


def worked_examples(slug: str) -> list[dict]:
    """The worked examples written for demo study `slug`; a demo with none passes [] itself."""
    written = demo_text()["worked_examples"]
    if slug not in written:
        raise ValueError(
            f"demo_text.json has no worked examples for {slug!r}: add them, or give the demo study worked_examples=[]"
        )
    return written[slug]


def scene_rows():
    """Ten scenes, each with three hypotheses of different likelihood (slider and 3-way label projects)."""
    for scene, entry in enumerate(demo_text()["scenes"], start=1):
        for index, hypothesis in enumerate(entry["hypotheses"], start=1):
            yield {
                "id": f"scene{scene}-{index}",
                "premise": entry["premise"],
                "hypothesis": hypothesis["text"],
                "label": hypothesis["label"],
            }


def scene_demo(slug: str, title: str, instructions: str) -> DemoProject:
    """A demo study of the ten scenes, with the worked examples written for `slug`."""
    return DemoProject(slug, title, instructions, worked_examples(slug), [("jsonl", list(scene_rows()))])


def atom_example_rows():
    """Examples with updates (atom validity and defeasible projects)."""
    for number, example in enumerate(demo_text()["atom_examples"], start=1):
        yield {
            "id": f"atoms{number}",
            "premise": example["premise"],
            "hypothesis": example["hypothesis"],
            "update": example["update"],
            "label": example["update_type"],
        }


def atom_rows():
    for number, example in enumerate(demo_text()["atom_examples"], start=1):
        yield {"example_id": f"atoms{number}", "atoms": example["atoms"]}


def paid_rows():
    """The paid demo study's items (their intended labels are not imported: workers supply them)."""
    for scene, entry in enumerate(demo_text()["paid_scenes"], start=1):
        for index, hypothesis in enumerate(entry["hypotheses"], start=1):
            yield {"id": f"paid-{scene}-{index}", "premise": entry["premise"], "hypothesis": hypothesis["text"]}


def paid_gold_rows():
    for number, row in enumerate(demo_text()["paid_gold"], start=1):
        yield {"id": f"paid-gold-{number}", **row}


def paid_qualification_rows():
    return list(demo_text()["paid_qualification"])


def writing_rows():
    for number, premise in enumerate(demo_text()["writing_premises"], start=1):
        yield {"id": f"write{number}", "premise": premise}
