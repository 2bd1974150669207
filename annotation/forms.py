"""Web forms. Project settings come from the settings schema (annotation.services.projects), so the form
accepts and refuses exactly what the API and the command line do."""
from django import forms

from annotation.services.importers import FORMATS
from annotation.services.projects import settings_schema
from annotation.tasktypes import TASK_TYPE_CHOICES, get_task_type


def project_form_class(task_type: str | None):
    """A form with the slug, the task type and every setting of that task type (the first one's when None)."""
    task = get_task_type(task_type or TASK_TYPE_CHOICES[0][0])
    fields = {
        "slug": forms.SlugField(max_length=80, help_text="Short name used in links and on the command line."),
        "task_type": forms.ChoiceField(choices=TASK_TYPE_CHOICES, initial=task.name),
        **settings_schema(task).form_fields(),
    }
    return type("ProjectForm", (forms.Form,), fields)


class ImportForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, name) for name in FORMATS])
    file = forms.FileField()
    gold = forms.BooleanField(required=False, label="Import the rows as hidden gold check items (their label is the reference)")

    def __init__(self, *args, formats=FORMATS, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(name, name) for name in formats]
