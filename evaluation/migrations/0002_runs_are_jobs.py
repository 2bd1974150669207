from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0001_initial"), ("jobs", "0001_initial")]
    operations = [migrations.DeleteModel(name="EvaluationRun")]
