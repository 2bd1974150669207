from django import forms
from django.conf import settings

from annotation.services.importers import FORMATS
from annotation.tasktypes import TASK_TYPE_CHOICES


class ProjectForm(forms.Form):
    slug = forms.SlugField(max_length=80, help_text="Short name used in links and on the command line.")
    title = forms.CharField(max_length=200, required=False)
    task_type = forms.ChoiceField(choices=TASK_TYPE_CHOICES)
    items_per_page = forms.IntegerField(min_value=1, max_value=50, required=False, help_text="Default: 5")
    redundancy = forms.IntegerField(min_value=1, max_value=100, required=False, help_text="Annotations per item before the disagreement rule; default 2")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)


class ImportForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, name) for name in FORMATS])
    file = forms.FileField()

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.NLI_MAX_IMPORT_BYTES:
            raise forms.ValidationError(f"the file is larger than {settings.NLI_MAX_IMPORT_BYTES // 1_000_000} MB")
        return upload
