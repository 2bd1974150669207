"""Every management command of the project answers --help (argparse formats help text with %, so a setting's
default such as "99%" once crashed `create_project --help`)."""

import io

import pytest
from django.core.management import get_commands, load_command_class

OUR_APPS = ("annotation", "evaluation", "jobs", "models_backend", "recruitment", "common", "operations")
COMMANDS = sorted((name, app) for name, app in get_commands().items() if app in OUR_APPS)


def test_the_project_has_commands_to_check():
    assert len(COMMANDS) >= 15, COMMANDS


@pytest.mark.parametrize(("name", "app"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_command_prints_its_help(name, app):
    command = load_command_class(app, name)
    parser = command.create_parser("manage.py", name)
    out = io.StringIO()
    parser.print_help(out)
    assert f"usage: manage.py {name}" in out.getvalue()
    assert command.help.strip(), f"{name} has no help text"
