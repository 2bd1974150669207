"""Demo accounts and one demo project per task type, written for this project (not taken from any dataset).

Loading goes through the same project and import services as the command line, so it is idempotent:
a second run finds the projects and examples in place and adds nothing.
"""
import io
import json

from django.contrib.auth import get_user_model

from annotation.models import Project
from annotation.services.access import grant_role
from annotation.services.importers import import_stream
from annotation.services.projects import create_project

DEMO_USERS = [
    ("admin", "admin", "demo-admin-pass"),
    ("author", "author", "demo-author-pass"),
    ("worker1", "worker", "demo-worker-pass"),
    ("worker2", "worker", "demo-worker-pass"),
    ("worker3", "worker", "demo-worker-pass"),
]

# Ten scenes, each with three hypotheses of different likelihood (slider and 3-way label projects).
SCENES = [
    ("A woman in a red coat is feeding pigeons on a snowy bench.", [
        ("A woman is outdoors in winter.", "e"), ("The woman is a retired teacher.", "n"), ("The woman is swimming in a pool.", "c")]),
    ("Two boys are racing wooden boats along a narrow canal.", [
        ("Children are playing near water.", "e"), ("The boats were carved by their grandfather.", "n"), ("The boys are asleep in bed.", "c")]),
    ("A chef flips a pancake high above a crowded stall.", [
        ("Someone is cooking.", "e"), ("The stall is at a Sunday market.", "n"), ("The chef is washing dishes at home alone.", "c")]),
    ("An old man repairs a bicycle tire in his garage.", [
        ("A man is fixing something.", "e"), ("The bicycle belongs to his granddaughter.", "n"), ("The man is riding a horse.", "c")]),
    ("A crowd watches fireworks explode over a dark harbor.", [
        ("People are watching a display at night.", "e"), ("It is New Year's Eve.", "n"), ("The harbor is empty and silent.", "c")]),
    ("A girl in a yellow helmet climbs an indoor rock wall.", [
        ("A girl is climbing.", "e"), ("She is training for a competition.", "n"), ("The girl is sitting on a sofa.", "c")]),
    ("Three musicians play violins on a subway platform.", [
        ("Music is being played underground.", "e"), ("The musicians are students.", "n"), ("The platform has no people on it.", "c")]),
    ("A dog carries a stick across a muddy field.", [
        ("An animal is holding something in its mouth.", "e"), ("The dog belongs to a farmer.", "n"), ("The dog is asleep indoors.", "c")]),
    ("A man in a suit is running to catch a departing bus.", [
        ("A man is in a hurry.", "e"), ("He is late for a job interview.", "n"), ("The man is lying on a beach.", "c")]),
    ("A baker arranges loaves of bread in a shop window.", [
        ("Bread is on display.", "e"), ("The bread was baked this morning.", "n"), ("The shop sells only shoes.", "c")]),
]

# Examples with updates and the atoms of their hypotheses (atom validity and defeasible projects).
ATOM_EXAMPLES = [
    ("A man in an apron is slicing vegetables in a restaurant kitchen.",
     "A cook is preparing a meal for customers.",
     "The restaurant closed for the night an hour ago.", "weakener",
     ["Someone is a cook.", "Someone is preparing a meal.", "The meal is for customers.", "The cook is tired."]),
    ("A woman is holding an umbrella on a busy street.",
     "It is raining in the city.",
     "People around her are wearing sunglasses and shorts.", "weakener",
     ["It is raining.", "The rain is in a city.", "The woman dislikes rain."]),
    ("A boy is wearing a cap and gown and smiling at a camera.",
     "A student is celebrating his graduation.",
     "He is holding a diploma with his name on it.", "strengthener",
     ["Someone is a student.", "Someone is celebrating.", "The celebration is for a graduation.", "The boy is at a university."]),
    ("Two people are shaking hands across a desk.",
     "Two colleagues are closing a business deal.",
     "A signed contract lies between them.", "strengthener",
     ["Two people are colleagues.", "A deal is being closed.", "The deal is about business."]),
    ("A family is loading suitcases into the trunk of a car.",
     "A family is leaving for a vacation.",
     "The children are wearing swimsuits under their clothes.", "strengthener",
     ["A family is leaving.", "The trip is a vacation.", "The family owns the car.", "The family is going abroad."]),
    ("A woman is sitting alone at a table with two cups of coffee.",
     "A woman is waiting for a friend.",
     "She keeps checking the door and her phone.", "strengthener",
     ["A woman is waiting.", "Someone she waits for is a friend.", "The friend is late."]),
    ("A man is standing on a ladder next to a house.",
     "A man is painting the house.",
     "He is holding a pair of hedge clippers.", "weakener",
     ["A man is painting.", "The thing being painted is a house.", "The paint is white."]),
    ("A crowd is cheering in a stadium at night.",
     "The home team is winning the game.",
     "The scoreboard shows the visitors ahead by three goals.", "weakener",
     ["A team is winning.", "The winning team is the home team.", "There is a game.", "The game is football."]),
]

DEMO_PROJECTS = [
    ("demo-slider", "unli_slider", "Demo: how likely is the hypothesis?",
     "Use the slider to say how likely each hypothesis is, given its premise.", [
         {"premise": "A man is asleep on a park bench.", "hypothesis": "A man is resting outside.",
          "answer": "near certain (0.95)", "why": "Sleeping on a bench is resting, and a park is outside."},
         {"premise": "A man is asleep on a park bench.", "hypothesis": "The man is homeless.",
          "answer": "unlikely (about 0.2)", "why": "Possible, but most people napping in a park are not."},
         {"premise": "A man is asleep on a park bench.", "hypothesis": "The man is running a race.",
          "answer": "near impossible (1 in 10,000)", "why": "He cannot sleep and race at once."},
     ]),
    ("demo-nli", "nli_label", "Demo: entailment, neutral or contradiction",
     "Choose the relation between the premise and the hypothesis.", [
         {"premise": "Two girls share an umbrella at a bus stop.", "hypothesis": "Two people are waiting outdoors.",
          "answer": "Entailment", "why": "A bus stop is outdoors and they are waiting there."},
         {"premise": "Two girls share an umbrella at a bus stop.", "hypothesis": "The girls are sisters.",
          "answer": "Neutral", "why": "Nothing says whether they are related."},
         {"premise": "Two girls share an umbrella at a bus stop.", "hypothesis": "The girls are swimming.",
          "answer": "Contradiction", "why": "They cannot swim while standing at a bus stop."},
     ]),
    ("demo-atoms", "atom_validity", "Demo: are these atoms valid?",
     "Check each candidate atom against the three criteria.", [
         {"premise": "A girl kicks a ball in a yard.", "hypothesis": "A child plays football with her father.",
          "atom": "A child plays with her father.", "answer": "valid", "why": "Grammatical, said by the hypothesis, not by the premise."},
         {"premise": "A girl kicks a ball in a yard.", "hypothesis": "A child plays football with her father.",
          "atom": "A girl kicks a ball.", "answer": "invalid", "why": "The premise already says it."},
         {"premise": "A girl kicks a ball in a yard.", "hypothesis": "A child plays football with her father.",
          "atom": "The father is a coach.", "answer": "invalid", "why": "The hypothesis does not say it."},
     ]),
    ("demo-defeasible", "defeasible_atom", "Demo: how does the update change the atom?",
     "Rate the effect of the update on each atom from -2 to +2.", [
         {"premise": "A man holds a leash in a park.", "update": "A dog is chasing a ball near him.",
          "hypothesis": "A man is walking his dog.", "atom": "The man has a dog.", "answer": "+2",
          "why": "A dog playing next to a man holding a leash makes it very likely his."},
         {"premise": "A man holds a leash in a park.", "update": "The leash is tangled around a bench.",
          "hypothesis": "A man is walking his dog.", "atom": "The man is walking.", "answer": "-1",
          "why": "He seems to be stopped, which makes walking somewhat less likely."},
     ]),
]


def _jsonl(rows) -> io.StringIO:
    return io.StringIO("".join(json.dumps(row) + "\n" for row in rows))


def _scene_rows():
    for scene, (premise, hypotheses) in enumerate(SCENES, start=1):
        for index, (hypothesis, label) in enumerate(hypotheses, start=1):
            yield {"id": f"scene{scene}-{index}", "premise": premise, "hypothesis": hypothesis, "label": label}


def _atom_example_rows():
    for number, (premise, hypothesis, update, update_type, _) in enumerate(ATOM_EXAMPLES, start=1):
        yield {"id": f"atoms{number}", "premise": premise, "hypothesis": hypothesis, "update": update, "label": update_type}


def _atom_rows():
    for number, (*_, atoms) in enumerate(ATOM_EXAMPLES, start=1):
        yield {"example_id": f"atoms{number}", "atoms": atoms}


def load_demo() -> dict:
    """Create the demo users and projects if missing; returns what was created."""
    User = get_user_model()
    created_users = []
    for username, role, password in DEMO_USERS:
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_password(password)
            if role == "admin":
                user.is_superuser = True
            user.save()
            created_users.append(username)
        grant_role(user, role)
    author = User.objects.get(username="author")
    created_items = 0
    for slug, task_type, title, instructions, worked_examples in DEMO_PROJECTS:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            project = create_project(
                slug, task_type, author, title=title, instructions=instructions,
                options={"worked_examples": worked_examples},
            )
        if task_type in ("unli_slider", "nli_label"):
            created_items += import_stream(project, _jsonl(_scene_rows()), "jsonl").items
        else:
            import_stream(project, _jsonl(_atom_example_rows()), "jsonl")
            created_items += import_stream(project, _jsonl(_atom_rows()), "atoms").items
    return {"users_created": created_users, "items_created": created_items}
