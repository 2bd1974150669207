"""The import pages' forms: choosing a file and a format, then confirming what its rows are and how its columns
and labels map to the study's (the same rules as the API's and the command line's, in services.importers)."""

from django import forms

from dataset_io.services.importers import GENERIC_FIELDS, PURPOSES, label_map_pairs

PURPOSE_NAMES = {
    "data": "items to annotate",
    "gold": "hidden gold check items (each row's label is the reference answer)",
    "qualification": "qualification test items (each row's label is the reference answer)",
}


class UploadForm(forms.Form):
    format = forms.ChoiceField(help_text="Only the formats that fit this study's task type are offered.")
    file = forms.FileField(
        help_text="UTF-8 text: CSV or JSON Lines. You see its first rows before anything is imported."
    )

    def __init__(self, *args, formats, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(name, name) for name in formats]


class ImportConfirmForm(forms.Form):
    format = forms.ChoiceField(widget=forms.Select(attrs={"data-reload-param": "format"}))
    purpose = forms.ChoiceField(initial="data", label="The rows are")
    label_map = forms.CharField(
        required=False,
        max_length=2000,
        label="Label mapping",
        widget=forms.TextInput(attrs={"size": 50}),
        help_text="Values the file writes that are not labels of this study, each as VALUE=LABEL, separated by "
        "commas (e.g. 0=contradiction, 1=neutral, 2=entailment). A value that is neither a label nor "
        "mapped refuses the file.",
    )

    def __init__(self, *args, formats, columns, purposes, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(name, name) for name in formats]
        # Only what the study's task type takes (TaskType.import_purposes): a choice that is always refused is none.
        self.fields["purpose"].choices = [(name, PURPOSE_NAMES[name]) for name in PURPOSES if name in purposes]
        options = [("", "(none)")] + [(column, column) for column in columns]
        for name in GENERIC_FIELDS:
            self.fields[f"map_{name}"] = forms.ChoiceField(
                choices=options,
                required=False,
                label=f"{name} column",
                initial=name if name in columns else "",
            )

    def label_pairs(self) -> list[str]:
        return label_map_pairs(self.cleaned_data.get("label_map", ""))

    def mapping(self) -> dict[str, str] | None:
        """Field -> column for the generic formats (fields left to "(none)" keep their own name)."""
        if self.cleaned_data["format"] not in ("jsonl", "csv"):
            return None
        return {
            name: self.cleaned_data[f"map_{name}"] for name in GENERIC_FIELDS if self.cleaned_data.get(f"map_{name}")
        }
