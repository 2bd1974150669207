"""The shape the model commands share: run one pipeline behind a progress bar on stderr, turn its input errors
(missing or bad files, unknown checkpoints, no WordNet) into a one-line CommandError, and print its summary as
one JSON line with --json or as a sentence for a person."""
import json

from django.core.management.base import BaseCommand, CommandError

from models_backend.dataio import InputError
from models_backend.pipelines.wordnet import WordNetError
from models_backend.progress import stderr_bar
from models_backend.registry import ModelError


class PipelineCommand(BaseCommand):
    bar_unit = "row"

    def run_pipeline(self, options, run) -> None:
        """`run(progress)` does the work and returns the summary dict."""
        try:
            with stderr_bar(self.bar_name(), unit=self.bar_unit) as progress:
                summary = run(progress)
        except (InputError, ModelError, WordNetError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(summary) if options["json"] else self.describe(summary))

    def bar_name(self) -> str:
        return self.__module__.rsplit(".", 1)[-1]

    def describe(self, summary: dict) -> str:
        """The summary as text for a person."""
        raise NotImplementedError
