import argparse
import getpass
import os
import sys
import time

from tqdm import tqdm

from annotation.management.project_command import ProjectCommand
from dataset_io.formats import ExportOptions, Names
from dataset_io.services import hub
from dataset_io.services.dataset_card import card_details
from dataset_io.services.exporters import record_export, write_export
from dataset_io.services.records import FREE_TEXT_CHOICES


class Command(ProjectCommand):
    help = (
        "Export a project's data in one format, or with --bundle every fitting format with its instrument "
        "versions, data statement and validation in one zip (streamed: memory does not grow with the project)."
    )

    def add_project_arguments(self, parser):
        parser.add_argument("--format", choices=Names(), help="the format (not with --bundle)")
        parser.add_argument("--bundle", action="store_true", help="write the dataset bundle (a zip) instead")
        parser.add_argument("--output", required=True)
        parser.add_argument(
            "--include-gold",
            action="store_true",
            help="also write the gold checks, flagged with their pool and reference",
        )
        parser.add_argument(
            "--include-unanswered", action="store_true", help="also write items without a label or answer yet, flagged"
        )
        parser.add_argument(
            "--free-text",
            choices=FREE_TEXT_CHOICES,
            default="keep",
            help="the text workers typed (reasons, explanations, written sentences): keep it, omit it, or scrub "
            "e-mail addresses and phone numbers from it",
        )
        card = parser.add_argument_group("the bundle's dataset card (what is not given, the card marks as missing)")
        card.add_argument("--license", default="", help="a Hub license identifier (cc-by-4.0, mit, ...) or SPDX id")
        card.add_argument("--pretty-name", default="", help="the dataset's name (default: the study's title)")
        card.add_argument("--description", default="", help="what the dataset is, in a few sentences")
        card.add_argument("--citation", default="", help="how to cite it (BibTeX)")
        card.add_argument("--language", default="", help="the texts' languages, comma-separated codes (en, de)")
        card.add_argument("--source-datasets", default="", help="original, or extended|<dataset>, comma-separated")
        card.add_argument(
            "--parquet",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="a Parquet copy of every data file (default: of each file above 10 MiB)",
        )
        publishing = parser.add_argument_group("publishing the bundle on the Hugging Face Hub")
        publishing.add_argument(
            "--push-to-hub",
            metavar="OWNER/NAME",
            default="",
            help="upload the bundle to this dataset repository (created if missing); the token is read from "
            "HF_TOKEN or asked for, used for this push only and never stored",
        )
        publishing.add_argument("--public", action="store_true", help="create the repository public (default: private)")

    def handle_project(self, project, opts):
        if bool(opts["bundle"]) == bool(opts["format"]):
            raise ValueError("give --format F or --bundle (one of the two)")
        if opts["push_to_hub"] and not opts["bundle"]:
            raise ValueError("--push-to-hub publishes the bundle: give --bundle with it")
        if opts["public"] and not opts["push_to_hub"]:
            raise ValueError("--public says how --push-to-hub creates the repository: give --push-to-hub with it")
        token = self._hub_token(opts["push_to_hub"])  # checked, with the repository, before anything is written
        options = ExportOptions(
            include_gold=opts["include_gold"],
            include_unanswered=opts["include_unanswered"],
            free_text=opts["free_text"],
        )
        started = time.perf_counter()
        try:
            if opts["bundle"]:
                from dataset_io.services.bundle import write_bundle

                card = card_details(  # checked before anything is written
                    license=opts["license"],
                    pretty_name=opts["pretty_name"],
                    description=opts["description"],
                    citation=opts["citation"],
                    languages=opts["language"],
                    source_datasets=opts["source_datasets"],
                )

                with tqdm(desc="bundle", unit=" steps", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:

                    def progress(done, total):
                        bar.total = total
                        bar.update(done - bar.n)

                    statement = write_bundle(
                        project, opts["output"], progress=progress, options=options, card=card, parquet=opts["parquet"]
                    )
                record_export(project, "bundle", None, via="command line", options=options)
                files = [
                    {key: file[key] for key in ("name", "records", "rows", "valid", "parquet")}
                    for file in statement["files"]
                ]
                lines = [
                    f"{f['name']}: {f['records']} records, {'valid' if f['valid'] else 'NOT VALID'}" for f in files
                ]
                lines.append(f"wrote the bundle {opts['output']}")
                pushed = None
                if opts["push_to_hub"]:
                    pushed = hub.push_bundle(opts["output"], opts["push_to_hub"], token, private=not opts["public"])
                    lines.append(f"pushed to {opts['push_to_hub']}: {pushed}")
                result = {
                    "output": opts["output"],
                    "files": files,
                    "valid": all(f["valid"] for f in files),
                    "pushed": pushed,
                    "seconds": round(time.perf_counter() - started, 3),
                }
                return result, "\n".join(lines)
            records = write_export(project, opts["format"], opts["output"], options=options)  # ExportError: ValueError
        except OSError as exc:
            raise ValueError(f"cannot write {opts['output']}: {exc.strerror}") from None
        record_export(project, opts["format"], None, via="command line", options=options)
        result = {"records": records, "output": opts["output"], "seconds": round(time.perf_counter() - started, 3)}
        return result, f"wrote {records} records to {opts['output']}"

    @staticmethod
    def _hub_token(repo_id: str) -> str:
        """The token for --push-to-hub (HF_TOKEN, or asked for on a terminal), after the repository's name."""
        if not repo_id:
            return ""
        hub.check_repo_id(repo_id)
        token = os.environ.get("HF_TOKEN", "")
        if not token and sys.stdin.isatty():
            token = getpass.getpass("Hugging Face token (write access; not stored): ")
        return hub.check_token(token)
