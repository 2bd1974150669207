from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("models_backend", "0001_initial"), ("jobs", "0001_initial")]
    operations = [migrations.DeleteModel(name="ModelRun")]
