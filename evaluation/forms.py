from django import forms

from dataset_io.services.importers import ImportFileError, check_size
from evaluation.runs import SUITE_CHOICES, SUITES, RunError, all_settings, clean_parameters


class RunForm(forms.Form):
    """Start a run: the suite, its files and every suite's settings (the chosen suite takes its own; the
    settings are declared once, in evaluation.runs.SUITES). Size limits are the import limit, checked when
    the files are stored."""

    suite = forms.ChoiceField(choices=SUITE_CHOICES)
    gold = forms.FileField(
        label="Gold / human file",
        help_text="For nli-atoms, defeasible, transitivity and epistemic: the input JSONL; for alt-test: the "
        "per-annotator labels (a study's annotations export).",
    )
    predictions = forms.FileField(required=False, help_text="Needed by unli, chaos, epistemic and alt-test.")
    project = forms.ModelChoiceField(
        queryset=None, required=False, help_text="The annotation project whose gold this is, if any."
    )

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects
        for name, field in all_settings().form_fields().items():
            suites = [suite.name for suite in SUITES.values() if name in suite.settings]
            field.help_text = f"{', '.join(suites)}: {field.help_text}"
            self.fields[name] = field

    def clean(self):
        data = super().clean()
        suite = SUITES.get(data.get("suite"))
        if suite is None:
            return data
        for name in ("gold", "predictions"):
            if data.get(name):
                try:
                    check_size(data[name].size)
                except ImportFileError as error:  # the one size limit, as for imports
                    self.add_error(name, error.errors[0][2])
        if "predictions" in suite.files and not data.get("predictions"):
            self.add_error("predictions", f"the {suite.name} suite needs a predictions file")
        if "predictions" not in suite.files and data.get("predictions"):
            self.add_error("predictions", f"the {suite.name} suite takes a single file")
        try:
            # Only the chosen suite's settings; the other fields of the form are left out.
            data["parameters"] = clean_parameters(suite.name, {s.name: data.get(s.name) for s in suite.settings})
        except RunError as error:
            self.add_error(None, str(error))
        return data

    def input_files(self) -> dict:
        """role -> upload, in the suite's terms (the first role takes the gold field)."""
        suite = SUITES[self.cleaned_data["suite"]]
        return dict(zip(suite.files, [self.cleaned_data["gold"], self.cleaned_data.get("predictions")]))
