"""What the dataset app adds to the study core, registered once when the app starts (DatasetIoConfig.ready
imports this module): its background jobs, the study page's import and export sections, the hourly
removal of stale uploads and old jobs' files, and the removal of stored exports when a participant is erased."""

from annotation.services import extensions
from annotation.services.crowd import participants
from dataset_io.formats import exportable, importable
from dataset_io.forms import UploadForm
from dataset_io.services import background, dataset_card, files  # importing background registers its job kinds


def _study_data(context) -> dict:
    project = context["project"]
    return {
        "upload_form": UploadForm(formats=importable(project.task, project.options)),
        "export_formats": exportable(project.task, project.options),
        "hub_licenses": dataset_card.HUB_LICENSES,  # offered as you type; any SPDX id is taken too
    }


extensions.add_panel("study_page_data", "dataset_io/_study_data.html", _study_data)
extensions.add_chore(extensions.Chore(files.remove_stale_files, files.EVERY_SECONDS))
participants.register_stored_file_remover(background.remove_stored_exports)
