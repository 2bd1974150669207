"""The web form of a model job, built from its declaration (models_backend.runs.FORMS): a select of registry
checkpoints per model it takes, a study select and an upload per input file (one of the two), its settings'
fields (common.schema), and the queue."""

from django import forms

from annotation.services import access
from common.schema import SettingError
from dataset_io.formats import get_format
from dataset_io.services.importers import ImportFileError, check_size
from models_backend import catalog
from models_backend.runs import ModelForm
from models_backend.study_files import fitting_format

ATOMS_FORMAT = "atoms"


def studies_exporting(user, formats: tuple[str, ...]):
    """The user's studies whose task type exports one of `formats`."""
    managed = access.managed_projects(user)
    return managed.filter(pk__in=[p.pk for p in managed if fitting_format(p, formats)]).order_by("slug")


def studies_taking_atoms(user):
    managed = access.managed_projects(user)
    atoms = get_format(ATOMS_FORMAT)
    return managed.filter(pk__in=[p.pk for p in managed if atoms.importable(p.task, p.options)])


class ModelJobForm(forms.Form):
    queue = forms.ChoiceField(
        choices=[("default", "default"), ("gpu", "gpu workers")],
        initial="default",
        help_text="gpu: run on a task worker started for the gpu queue",
    )

    def __init__(self, spec: ModelForm, user, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.spec, self.user = spec, user
        for slot in spec.models:
            options = catalog.choices(user, slot.kinds)
            self.fields[slot.param] = forms.ChoiceField(
                label=slot.label,
                required=slot.required,
                help_text=slot.help or f"Kinds: {', '.join(slot.kinds)}.",
                choices=([] if slot.required and options else [("", "—")]) + options,
            )
        for slot in spec.files:
            self.fields[f"{slot.role}_study"] = forms.ModelChoiceField(
                queryset=studies_exporting(user, slot.formats),
                required=False,
                label=f"{slot.label}: a study",
                to_field_name="slug",
                help_text=f"Its export ({' or '.join(slot.formats)}) becomes the input.",
            )
            self.fields[f"{slot.role}_file"] = forms.FileField(
                required=False, label=f"{slot.label}: or a file", help_text=slot.help
            )
        if spec.into_study:
            self.fields["into_study"] = forms.ModelChoiceField(
                queryset=studies_taking_atoms(user),
                required=False,
                to_field_name="slug",
                label="Import into study",
                help_text="An atom validity study of yours; left empty: only the file.",
            )
        self.settings_fields = list(spec.settings.form_fields())
        self.fields.update(spec.settings.form_fields())
        self.order_fields(
            [
                *(s.param for s in spec.models),
                *(f"{s.role}_{end}" for s in spec.files for end in ("study", "file")),
                *(["into_study"] if spec.into_study else []),
                *self.settings_fields,
                "queue",
            ]
        )
        for name, field in self.fields.items():  # the help under each field is read out with it
            if field.help_text:
                field.widget.attrs["aria-describedby"] = f"id_{name}-help"

    def clean(self):
        data = super().clean()
        for slot in self.spec.files:
            study, upload = data.get(f"{slot.role}_study"), data.get(f"{slot.role}_file")
            if bool(study) == bool(upload):
                self.add_error(f"{slot.role}_study", f"{slot.label}: pick a study or upload a file (one of the two)")
            elif upload:
                try:
                    check_size(upload.size)
                except ImportFileError as error:  # the one size limit, as for imports
                    self.add_error(f"{slot.role}_file", error.errors[0][2])
        try:
            data["settings"] = self.spec.settings.clean({name: data.get(name) for name in self.settings_fields})
        except SettingError as error:
            for name, message in error.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return data

    def sources(self) -> dict:
        """role -> the picked study or the upload."""
        return {
            slot.role: self.cleaned_data.get(f"{slot.role}_study") or self.cleaned_data[f"{slot.role}_file"]
            for slot in self.spec.files
        }

    def checkpoints(self) -> dict:
        """param -> picked checkpoint key (optional ones left out when empty)."""
        return {
            slot.param: self.cleaned_data[slot.param] for slot in self.spec.models if self.cleaned_data.get(slot.param)
        }
