from annotation.management.project_command import ProjectCommand
from annotation.services.linking import send_to_validation


class Command(ProjectCommand):
    help = (
        "Send a project's written pairs that are not there yet to its linked validation project (created "
        "and linked on the first send). Sending again creates nothing new."
    )

    def handle_project(self, project, opts):
        report = send_to_validation(project)  # a LinkError (a ValueError) when nothing can be sent
        text = f"sent {report.created} new pairs to {report.validation_project} ({report.already_sent} sent before)"
        return report.as_dict(), text
