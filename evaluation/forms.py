from django import forms
from django.conf import settings

from evaluation.runs import SUITE_CHOICES, SUITES, RunError, clean_parameters


def _limited(upload):
    if upload and upload.size > settings.NLI_MAX_IMPORT_BYTES:
        raise forms.ValidationError(f"the file is larger than {settings.NLI_MAX_IMPORT_BYTES // 1_000_000} MB")
    return upload


class RunForm(forms.Form):
    """Start a run: the suite, its files and the settings of the suites that have any."""

    suite = forms.ChoiceField(choices=SUITE_CHOICES)
    gold = forms.FileField(label="Gold / human file",
                           help_text="For nli-atoms, defeasible, transitivity and epistemic: the input JSONL.")
    predictions = forms.FileField(required=False, help_text="Needed by unli, chaos and epistemic.")
    project = forms.ModelChoiceField(queryset=None, required=False,
                                     help_text="The annotation project whose gold this is, if any.")
    model = forms.CharField(required=False, help_text="chaos: model name inside a prediction file with several")
    divergence = forms.BooleanField(required=False, help_text="chaos: JS divergence instead of JS distance")
    seed = forms.IntegerField(required=False, initial=0, help_text="chaos: seed of the human split-half baseline")
    weighted = forms.BooleanField(required=False, help_text="defeasible: weight buckets by support")
    atom_labels = forms.ChoiceField(choices=[(c, c) for c in ("auto", "binary", "ternary")], initial="auto",
                                    help_text="defeasible: how atom labels are scored")

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects

    def clean_gold(self):
        return _limited(self.cleaned_data["gold"])

    def clean_predictions(self):
        return _limited(self.cleaned_data["predictions"])

    def clean(self):
        data = super().clean()
        suite = SUITES.get(data.get("suite"))
        if suite is None:
            return data
        if "predictions" in suite.files and not data.get("predictions"):
            self.add_error("predictions", f"the {suite.name} suite needs a predictions file")
        if "predictions" not in suite.files and data.get("predictions"):
            self.add_error("predictions", f"the {suite.name} suite takes a single file")
        try:
            # Only the chosen suite's settings; the other fields of the form are left out.
            data["parameters"] = clean_parameters(
                suite.name, {p.name: data.get(p.name) for p in suite.parameters}
            )
        except RunError as error:
            self.add_error(None, str(error))
        return data

    def input_files(self) -> dict:
        """role -> upload, in the suite's terms (the first role takes the gold field)."""
        suite = SUITES[self.cleaned_data["suite"]]
        uploads = [self.cleaned_data["gold"], self.cleaned_data.get("predictions")]
        return dict(zip(suite.files, uploads))
