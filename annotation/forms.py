"""Web forms. Project settings come from the settings schema (annotation.services.projects), so the form
accepts and refuses exactly what the API and the command line do."""

import json

from django import forms
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from annotation.services.crowd.budget import PLAN_SETTINGS
from annotation.services.study_settings import WORKED_EXAMPLE_FIELDS, current_setting, settings_schema
from annotation.tasktypes import TASK_TYPE_CHOICES, get_task_type


class WorkedExamplesWidget(forms.Widget):
    """Worked examples as a fieldset per example (premise, hypothesis, update, atom, answer, why) and two blank
    ones to add more, instead of JSON to type by hand. The API and the command line take the same list as JSON."""

    template_name = "annotation/_worked_examples_widget.html"
    BLANK = 2

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        examples = json.loads(value) if isinstance(value, str) and value.strip() else value
        examples = [
            example for example in (examples if isinstance(examples, list) else []) if isinstance(example, dict)
        ]
        context["widget"]["examples"] = [
            [(field, f"{name}-{index}-{field}", str(example.get(field, ""))) for field in WORKED_EXAMPLE_FIELDS]
            for index, example in enumerate([*examples, *([{}] * self.BLANK)])
        ]
        return context

    def render(self, name, value, attrs=None, renderer=None):
        # The site's template engine (templates/), not the form renderer's, which reads only Django's own.
        return mark_safe(render_to_string(self.template_name, self.get_context(name, value, attrs)))

    def value_from_datadict(self, data, files, name):
        examples, index = [], 0
        while any(f"{name}-{index}-{field}" in data for field in WORKED_EXAMPLE_FIELDS):
            example = {field: data.get(f"{name}-{index}-{field}", "").strip() for field in WORKED_EXAMPLE_FIELDS}
            if any(example.values()):  # a blank fieldset adds nothing
                examples.append({field: text for field, text in example.items() if text or field in ("answer", "why")})
            index += 1
        return examples

    def value_omitted_from_data(self, data, files, name):
        return not any(key.startswith(f"{name}-") for key in data)

    def id_for_label(self, id_):
        return f"{id_}-0-premise" if id_ else id_  # the field's label leads to the first example


class WorkedExamplesField(forms.Field):
    widget = WorkedExamplesWidget

    def __init__(self, setting, **kwargs):
        self.setting = setting
        super().__init__(
            required=False,
            label=setting.title,
            help_text="Shown beside the instructions. Premise, "
            "hypothesis and answer are needed; update and atom where the task shows them; why, "
            "the reason to give. Leave a fieldset empty to add nothing; empty one to remove it.",
            **kwargs,
        )

    def clean(self, value):
        from common.schema import SettingError

        try:
            return self.setting.clean(value if value else [])
        except SettingError as error:
            raise forms.ValidationError(error.errors[self.setting.name]) from None


def project_form_class(task_type: str | None, editing: bool = False):
    """A form with the task type and every setting of that task type (the first one's when None); a new
    study's form also asks for its slug."""
    names = dict(TASK_TYPE_CHOICES)
    task = get_task_type(task_type if task_type in names else TASK_TYPE_CHOICES[0][0])
    fields = {}
    if not editing:
        fields["slug"] = forms.SlugField(max_length=80, help_text="Short name used in links and on the command line.")
    fields["task_type"] = forms.ChoiceField(
        choices=TASK_TYPE_CHOICES,
        initial=task.name,
        help_text="Changing it shows that task type's settings.",
        widget=forms.Select(attrs={"data-reload-param": "task_type"}),
    )
    schema = settings_schema(task)
    fields.update(schema.form_fields())
    fields["worked_examples"] = WorkedExamplesField(schema.get("worked_examples"))
    return type("ProjectForm", (forms.Form,), fields)


def project_settings_initial(project) -> dict:
    """The project's current settings, written as the form shows them."""
    schema = settings_schema(project.task)
    initial = {"task_type": project.task_type}
    for setting in schema:
        value = current_setting(project, schema, setting.name)
        if setting.kind == "json":
            value = json.dumps(value if value is not None else setting.default, ensure_ascii=False, indent=1)
        elif setting.kind == "choice" and isinstance(value, list):
            value = ",".join(value)
        initial[setting.name] = value
    return initial


# The budget planner's questions, from its settings (annotation.services.crowd.budget).
BudgetPlanForm = type("BudgetPlanForm", (forms.Form,), PLAN_SETTINGS.form_fields())
