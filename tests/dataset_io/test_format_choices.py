"""Every list of formats (the commands' --format choices, the API's import field, the OpenAPI schema) reads the
registry when it is asked, not when its module loads: a format that an app registers once this app's modules
are loaded (as the label-variation app's three are, in its AppConfig.ready) is offered everywhere."""

import pytest
from django.core.management import load_command_class

from dataset_io.formats import FORMATS, Format, register
from dataset_io.serializers import ImportSerializer

pytestmark = pytest.mark.django_db
COMMANDS = ("import_items", "export_dataset", "validate_dataset")


class Late(Format):
    name = "late"
    title = "a format registered after start-up"
    extension = "jsonl"
    summary = "nothing"

    def parse(self, line, record, context):
        raise NotImplementedError  # never read: the test asks only whether the format is offered


@pytest.fixture
def late_format():
    register(Late())
    yield Late.name
    del FORMATS[Late.name]


def format_choices(command: str):
    parser = load_command_class("dataset_io", command).create_parser("manage.py", command)
    return next(action.choices for action in parser._actions if action.dest == "format")


def test_a_format_registered_after_start_up_is_offered_everywhere(late_format, client):
    assert all(late_format in format_choices(command) for command in COMMANDS)
    assert late_format in ImportSerializer().fields["format"].choices
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert late_format in schema["components"]["schemas"]["FormatEnum"]["enum"]  # the import's format field
    export = schema["paths"]["/api/v1/projects/{slug}/export/"]["get"]["parameters"]
    assert late_format in next(parameter for parameter in export if parameter["name"] == "as")["schema"]["enum"]


@pytest.mark.label_variation
def test_the_label_variation_formats_are_offered_everywhere(client):
    plug_in = {"varierr", "livenli", "taxonomy"}
    assert all(plug_in <= set(format_choices(command)) for command in COMMANDS)
    assert plug_in <= set(ImportSerializer().fields["format"].choices)
    assert plug_in <= set(
        client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]["FormatEnum"]["enum"]
    )
