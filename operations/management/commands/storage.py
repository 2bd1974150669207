from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand, CommandError

from jobs.files import check_storage, describe_storage

NAME_RULE = (
    "S3 bucket names are 3 to 63 characters: lowercase letters, digits, dots and hyphens, beginning and ending "
    "with a letter or a digit"
)


class Command(BaseCommand):
    help = (
        "The kept files' storage: --check writes a probe file and reads it back; --create-bucket creates "
        "AWS_STORAGE_BUCKET_NAME at AWS_S3_ENDPOINT_URL with the app's own S3 settings."
    )
    # The system checks ask the bucket, which --create-bucket is here to make.
    requires_system_checks = []

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--check", action="store_true", help="write, read back and remove a probe file")
        action.add_argument("--create-bucket", action="store_true", help="create the bucket when it does not exist")

    def handle(self, *args, **options):
        if options["check"]:
            problem = check_storage()
            if problem:
                raise CommandError(problem)
            self.stdout.write(f"the storage ({describe_storage()}) can be written and read back")
        else:
            self.stdout.write(self.create_bucket())

    def create_bucket(self) -> str:
        bucket = settings.AWS_STORAGE_BUCKET_NAME
        if not bucket:
            return f"the storage is the {describe_storage()} (AWS_STORAGE_BUCKET_NAME is not set): nothing to create"
        # The client of django-storages' backend: the endpoint, credentials, region and timeouts the app uses.
        client = default_storage.connection.meta.client
        where = settings.AWS_S3_ENDPOINT_URL or "AWS S3"
        refused = f"could not create bucket {bucket!r} at {where}"
        try:
            if self._exists(client, bucket):
                return f"bucket {bucket!r} exists already at {where}"
            region = settings.AWS_S3_REGION_NAME
            location = (
                {"CreateBucketConfiguration": {"LocationConstraint": region}}
                if region not in (None, "us-east-1")
                else {}
            )
            client.create_bucket(Bucket=bucket, **location)
        except ParamValidationError:  # botocore's own check of the name, before any request
            raise CommandError(f"{refused}: the name is refused ({NAME_RULE})") from None
        except ClientError as error:
            details = error.response.get("Error", {})
            reason = f"{details.get('Code', '')} {details.get('Message', '')}".strip()
            if details.get("Code") == "InvalidBucketName":
                reason += f" ({NAME_RULE})"
            raise CommandError(f"{refused}: {reason}") from None
        except BotoCoreError as error:  # no endpoint, no credentials, ...
            raise CommandError(f"{refused}: {' '.join(str(error).split())}") from None
        return f"created bucket {bucket!r} at {where}"

    @staticmethod
    def _exists(client, bucket: str) -> bool:
        try:
            client.head_bucket(Bucket=bucket)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket"):
                return False
            raise
        return True
