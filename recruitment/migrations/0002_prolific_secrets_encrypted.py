"""The Prolific API token and webhook secret move to encrypted columns (recruitment/secrets.py): each stored
value is sealed under the current key (SECRETS_ENCRYPTION_KEY, or derived from SECRET_KEY), then the plain
columns go. Reversible: going back writes them in clear again; a value the current key no longer opens is
left empty (entered again on the study's Prolific page)."""

from django.db import migrations, models

from recruitment import secrets

PAIRS = (("token", "token_encrypted"), ("webhook_secret", "webhook_secret_encrypted"))


def encrypt(apps, schema_editor):
    ProlificLink = apps.get_model("recruitment", "ProlificLink")
    for link in ProlificLink.objects.only("pk", *(plain for plain, _ in PAIRS)).iterator():
        sealed = {encrypted: secrets.seal(getattr(link, plain)) for plain, encrypted in PAIRS}
        ProlificLink.objects.filter(pk=link.pk).update(**sealed)


def decrypt(apps, schema_editor):
    ProlificLink = apps.get_model("recruitment", "ProlificLink")
    for link in ProlificLink.objects.only("pk", *(encrypted for _, encrypted in PAIRS)).iterator():
        plain = {}
        for name, encrypted in PAIRS:
            try:
                plain[name] = secrets.reveal(getattr(link, encrypted), name)
            except secrets.SecretUnreadable:
                plain[name] = ""
        ProlificLink.objects.filter(pk=link.pk).update(**plain)


class Migration(migrations.Migration):
    dependencies = [("recruitment", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="prolificlink",
            name="token_encrypted",
            field=models.TextField(blank=True, default=""),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="prolificlink",
            name="webhook_secret_encrypted",
            field=models.TextField(blank=True, default=""),
            preserve_default=False,
        ),
        migrations.RunPython(encrypt, decrypt),
        migrations.RemoveField(model_name="prolificlink", name="token"),
        migrations.RemoveField(model_name="prolificlink", name="webhook_secret"),
    ]
