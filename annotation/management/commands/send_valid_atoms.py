from annotation.management.project_command import ProjectCommand
from annotation.services.atom_chain import send_valid_atoms


class Command(ProjectCommand):
    help = (
        "Send an atom validity study's settled valid atoms (with their examples' updates) to a defeasible atom "
        "study: an existing one (--to) or a new draft (--new-title). Sending again adds only atoms settled valid "
        "since; atoms not settled yet, invalid ones and those without an update are left out and counted."
    )

    def add_project_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--to", default="", help="the slug of the defeasible atom study to fill")
        target.add_argument("--new-title", default="", help="the title of a new defeasible atom study")

    def handle_project(self, project, opts):
        # A ChainError (a ValueError: the source or target at fault) is printed as one line.
        report = send_valid_atoms(project, to=opts["to"], new_title=opts["new_title"])
        return report.as_dict(), report.summary()
