"""The shape the model commands share: run one pipeline behind a progress bar on stderr, turn its input errors
(missing or bad files, unknown checkpoints, no WordNet) into a one-line CommandError, and print its summary as
one JSON line with --json or as a sentence for a person."""

import json
from abc import ABCMeta, abstractmethod

from django.core.management.base import BaseCommand, CommandError

from common.commands import errors_as_command_errors
from models_backend.dataio import InputError
from models_backend.pipelines.wordnet import WordNetError
from models_backend.progress import stderr_bar
from models_backend.registry import ModelError


class PipelineCommand(BaseCommand, metaclass=ABCMeta):
    bar_unit = "row"
    default_batch_size = 64

    def add_arguments(self, parser):
        self.add_pipeline_arguments(parser)
        parser.add_argument("--batch-size", type=int, default=self.default_batch_size)
        parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
        parser.add_argument("--json", action="store_true", help="print the run summary as one JSON line")

    def add_pipeline_arguments(self, parser):
        """Options of this pipeline beyond --batch-size, --device and --json."""

    def run_pipeline(self, options, run) -> None:
        """`run(progress)` does the work and returns the summary dict."""
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        with (
            errors_as_command_errors(InputError, ModelError, WordNetError, ValueError),
            stderr_bar(self.bar_name(), unit=self.bar_unit) as progress,
        ):
            summary = run(progress)
        self.stdout.write(json.dumps(summary) if options["json"] else self.describe(summary))

    def bar_name(self) -> str:
        return self.__module__.rsplit(".", 1)[-1]

    @abstractmethod
    def describe(self, summary: dict) -> str:
        """The summary as text for a person."""
