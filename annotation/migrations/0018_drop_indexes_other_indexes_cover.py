"""Drop the foreign-key indexes that a composite index already starts with (issue 54, item 4): every claim and
submit wrote each of them. Only the indexes go: the database operations leave the foreign-key constraints as
they are (an AlterField would drop and re-add each constraint, checking every row again)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# (table, column, the index Django named for the foreign key)
INDEXES = [
    ("annotation_assignment", "project_id", "annotation_assignment_project_id_4a6ef252"),
    ("annotation_claim", "item_id", "annotation_claim_item_id_f3c17bf7"),
    ("annotation_claim", "worker_id", "annotation_claim_worker_id_56b0aac8"),
    ("annotation_item", "project_id", "annotation_item_project_id_2466b61c"),
]


def foreign_key(to, related_name):
    return models.ForeignKey(
        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name=related_name, to=to
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_assignment_submitted_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField("assignment", "project", foreign_key("annotation.project", "assignments")),
                migrations.AlterField("claim", "item", foreign_key("annotation.item", "claims")),
                migrations.AlterField("claim", "worker", foreign_key(settings.AUTH_USER_MODEL, "claims")),
                migrations.AlterField("item", "project", foreign_key("annotation.project", "items")),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"', reverse_sql=f'CREATE INDEX "{name}" ON "{table}" ("{column}")'
                )
                for table, column, name in INDEXES
            ],
        )
    ]
