"""The Prolific API token and webhook secret are stored encrypted (recruitment/secrets.py): the database row
holds no plain secret, the client and the webhook check still use them, a changed key (SECRETS_ENCRYPTION_KEY,
or SECRET_KEY it is derived from) asks for them again instead of crashing, a malformed key is refused before
anything is stored, and the migration encrypts rows stored in clear (and decrypts them going back)."""

import logging

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from annotation.models import AuditEntry
from recruitment.apps import secrets_key_check
from recruitment.models import ProlificLink, WebhookEvent
from recruitment.secrets import SecretUnreadable
from recruitment.services import studies
from tests.recruitment.conftest import SITE, TOKEN, WEBHOOK_SECRET
from tests.recruitment.test_webhooks import deliver, event

pytestmark = pytest.mark.django_db


def raw_values() -> list[str]:
    """Every value of every stored link, read past the model with plain SQL."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM recruitment_prolificlink")
        return [str(value) for row in cursor.fetchall() for value in row]


def raw_sealed() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT token_encrypted, webhook_secret_encrypted FROM recruitment_prolificlink")
        return cursor.fetchone()


def page(client, study) -> str:
    return client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()


@pytest.fixture
def author_client(author):
    client = Client()
    client.force_login(author)
    return client


def test_the_database_row_holds_no_plain_secret(study):
    values = raw_values()
    assert values and not [value for value in values if TOKEN in value or WEBHOOK_SECRET in value]
    token_sealed, secret_sealed = raw_sealed()
    assert token_sealed.startswith("gAAAAA") and secret_sealed.startswith("gAAAAA")  # Fernet tokens
    link = ProlificLink.objects.get()
    assert (link.token, link.webhook_secret) == (TOKEN, WEBHOOK_SECRET)
    assert link.secret_states == {"token": "set", "webhook_secret": "set"} and link.unreadable_secrets == []


def test_an_empty_secret_is_stored_empty_and_a_new_one_replaces_the_old(study, author):
    before = raw_sealed()
    studies.save_link(study, author, name="Renamed")  # no token typed: the stored one stays
    assert raw_sealed() == before
    studies.save_link(study, author, token="a-new-token-77")
    assert raw_sealed()[0] != before[0] and raw_sealed()[1] == before[1]
    assert ProlificLink.objects.get().token == "a-new-token-77"
    assert not [value for value in raw_values() if "a-new-token-77" in value]
    bare = ProlificLink(project=study)
    assert (bare.token, bare.token_encrypted, bare.secret_states["token"]) == ("", "", "unset")


def test_the_client_still_authenticates_and_the_webhook_still_verifies(study, author, standin):
    link = studies.create_draft(studies.link_of(study), SITE, author)  # the stand-in refuses another token
    assert link.prolific_study_id in standin.studies
    assert {call.authorization for call in standin.calls} == {f"Token {TOKEN}"}
    response = deliver(event(link, "ev-ok", "AWAITING REVIEW", "2026-03-01T10:00:00Z"))
    assert response.status_code == 200 and WebhookEvent.objects.count() == 1


def test_a_changed_key_asks_for_the_secrets_again_and_sends_nothing(study, author, author_client, standin, settings):
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()
    link = ProlificLink.objects.get()
    assert link.unreadable_secrets == ["API token", "webhook secret"]
    with pytest.raises(SecretUnreadable, match="enter the API token again"):
        _ = link.token
    html = page(author_client, study)
    assert 'id="secrets-unreadable"' in html and "can no longer be read" in html
    assert html.count("(stored but unreadable: enter it again)") == 2 and "(set: type a new one" not in html
    assert "nothing can be sent to Prolific" in html and "events for this study are refused" in html

    refused = author_client.post(
        f"/recruitment/projects/{study.slug}/prolific/study/", {"action": "create"}, follow=True
    )
    assert refused.status_code == 200 and "enter the API token again" in refused.content.decode()
    assert standin.calls == [] and ProlificLink.objects.get().prolific_study_id == ""
    assert [request.method for request in studies.dry_run(link, SITE)] == ["POST", "POST"]  # a rehearsal still runs

    author_client.post(
        f"/recruitment/projects/{study.slug}/prolific/link/",
        {"token": TOKEN, "webhook_secret": WEBHOOK_SECRET, "name": "Judge sentence pairs"},
    )
    html = page(author_client, study)
    assert 'id="secrets-unreadable"' not in html and html.count("(set: type a new one to replace it)") == 2
    assert studies.create_draft(studies.link_of(study), SITE, author).prolific_study_id in standin.studies


def test_a_token_unreadable_but_a_secret_still_set_says_only_that(study, author, author_client, settings):
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()
    studies.save_link(study, author, webhook_secret=WEBHOOK_SECRET)  # re-entered under the new key
    assert ProlificLink.objects.get().secret_states == {"token": "unreadable", "webhook_secret": "set"}
    html = page(author_client, study)
    assert "The API token stored for this study can no longer be read" in html
    assert "nothing can be sent to Prolific" in html and "events for this study are refused" not in html


def test_rotating_secret_key_without_a_key_of_its_own_leaves_them_unreadable(study, author, settings):
    settings.SECRET_KEY = "a-rotated-secret-key-for-this-test"
    with pytest.raises(SecretUnreadable, match="enter the webhook secret again"):
        _ = ProlificLink.objects.get().webhook_secret
    with pytest.raises(studies.RecruitmentError, match="enter the API token again"):
        studies.client_for(ProlificLink.objects.get())


def test_with_a_key_of_its_own_secret_key_rotates_freely(study, author, settings):
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()
    studies.save_link(study, author, token=TOKEN, webhook_secret=WEBHOOK_SECRET)
    settings.SECRET_KEY = "a-rotated-secret-key-for-this-test"
    link = ProlificLink.objects.get()
    assert (link.token, link.webhook_secret) == (TOKEN, WEBHOOK_SECRET)


def test_an_event_for_a_study_whose_secret_is_unreadable_is_refused_and_logged(
    study, author, standin, settings, caplog
):
    link = studies.create_draft(studies.link_of(study), SITE, author)
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()
    caplog.set_level(logging.WARNING, "recruitment.services.webhooks")
    response = deliver(event(link, "ev-1", "AWAITING REVIEW", "2026-03-01T10:00:00Z"))
    assert response.status_code == 403 and WebhookEvent.objects.count() == 0
    assert "enter the webhook secret again" in caplog.text and WEBHOOK_SECRET not in caplog.text


def test_a_malformed_key_is_refused_before_anything_is_stored(study, author, settings):
    before, audits = raw_sealed(), AuditEntry.objects.count()
    settings.SECRETS_ENCRYPTION_KEY = "not-a-fernet-key"
    with pytest.raises(ImproperlyConfigured, match="SECRETS_ENCRYPTION_KEY is not a Fernet key"):
        studies.save_link(study, author, token="another-token")
    assert raw_sealed() == before and AuditEntry.objects.count() == audits
    (problem,) = secrets_key_check(None)
    assert problem.id == "recruitment.E001" and "Fernet.generate_key()" in problem.msg
    settings.SECRETS_ENCRYPTION_KEY = Fernet.generate_key().decode()
    assert secrets_key_check(None) == []


@pytest.mark.django_db(transaction=True)
def test_the_migration_encrypts_rows_stored_in_clear_and_decrypts_them_going_back(make_project):
    project = make_project("nli_label", slug="migrated")
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("recruitment")
    plain_state = [("recruitment", "0001_initial")]
    executor.migrate(plain_state)
    try:
        OldLink = executor.loader.project_state(plain_state).apps.get_model("recruitment", "ProlificLink")
        OldLink.objects.create(project_id=project.pk, token=TOKEN, webhook_secret="", name="Old")
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
        assert not [value for value in raw_values() if TOKEN in value]
        link = ProlificLink.objects.get()
        assert (link.token, link.webhook_secret, link.name) == (TOKEN, "", "Old")

        executor = MigrationExecutor(connection)
        executor.migrate(plain_state)
        with connection.cursor() as cursor:
            cursor.execute("SELECT token, webhook_secret FROM recruitment_prolificlink")
            assert cursor.fetchall() == [(TOKEN, "")]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
