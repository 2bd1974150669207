from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("models_backend", "0001_initial"), ("jobs", "0002_evaluation_and_model_runs")]
    operations = [migrations.DeleteModel(name="ModelRun")]
