"""Demo text written for this project (not taken from any dataset), shared by the task types' demo projects."""


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


def scene_rows():
    for scene, (premise, hypotheses) in enumerate(SCENES, start=1):
        for index, (hypothesis, label) in enumerate(hypotheses, start=1):
            yield {"id": f"scene{scene}-{index}", "premise": premise, "hypothesis": hypothesis, "label": label}


def atom_example_rows():
    for number, (premise, hypothesis, update, update_type, _) in enumerate(ATOM_EXAMPLES, start=1):
        yield {"id": f"atoms{number}", "premise": premise, "hypothesis": hypothesis, "update": update, "label": update_type}


def atom_rows():
    for number, (*_, atoms) in enumerate(ATOM_EXAMPLES, start=1):
        yield {"example_id": f"atoms{number}", "atoms": atoms}
