"""Trigram indexes for the dashboard's item search (annotation.services.items.search_items) on PostgreSQL.

Django compiles `icontains` to UPPER(column::text) LIKE UPPER(pattern), so each index is on UPPER(column) with
pg_trgm's operator class: the planner then answers the search's LIKE from the index, with exactly the results
of today's query. The exact source id gets a plain btree index, so that all of an example's conditions combine
into one bitmap scan. SQLite has neither pg_trgm nor GIN indexes: there the migration does nothing. The indexes
are not in the models' state (Django has no portable way to declare them), so makemigrations leaves them alone.
"""
from django.db import migrations


class PostgresOnlySQL(migrations.RunSQL):
    """RunSQL that runs on PostgreSQL only, forwards and backwards."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def trigram_index(name: str, table: str, column: str) -> PostgresOnlySQL:
    return PostgresOnlySQL(
        f'CREATE INDEX {name} ON {table} USING gin (UPPER("{column}") gin_trgm_ops)',
        f"DROP INDEX {name}",
    )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0007_qualification_min_delta'),
    ]

    operations = [
        # pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
        PostgresOnlySQL("CREATE EXTENSION IF NOT EXISTS pg_trgm", "DROP EXTENSION IF EXISTS pg_trgm"),
        trigram_index("example_premise_trgm", "annotation_example", "premise"),
        trigram_index("example_hypothesis_trgm", "annotation_example", "hypothesis"),
        trigram_index("atom_text_trgm", "annotation_atom", "text"),
        PostgresOnlySQL(
            "CREATE INDEX example_source_id_idx ON annotation_example (source_id)",
            "DROP INDEX example_source_id_idx",
        ),
    ]
