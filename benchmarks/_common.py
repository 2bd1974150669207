"""Helpers shared by the engine benchmarks: a scratch PostgreSQL database, Django set up against it,
bulk-built projects, progress on stderr and the figures on stdout.

Django reads DATABASE_URL and NLI_STUDIO_VAR when its settings load, so `setup_django` sets them first
and only then imports Django.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
POSTGRES_SERVER = "postgres://postgres@127.0.0.1:5432"
PYTHON = sys.executable

_started = time.perf_counter()


def log(message: str) -> None:
    """Progress goes to stderr so that stdout carries only the figures."""
    print(f"[{time.perf_counter() - _started:7.1f} s] {message}", file=sys.stderr, flush=True)


def argument_parser(doc: str) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring as help, and --json."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    return parser


def emit(figures: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(figures))
    else:
        width = max(len(key) for key in figures)
        for key, value in figures.items():
            print(f"{key:<{width}}  {value}")


def load_average() -> float:
    """The machine's 1-minute load average: other work on the machine skews every figure here."""
    return round(os.getloadavg()[0], 2)


def django_env(database_url: str | None, var_dir: str | Path, **extra: str | None) -> dict[str, str]:
    """The environment a Django process of this repo needs to run against `database_url` (None: the
    embedded SQLite default). A value of None in `extra` removes that variable."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "NLI_STUDIO_VAR": str(var_dir),
        "PYTHONPATH": str(REPO_ROOT),
        **extra,
    }
    return {key: value for key, value in env.items() if value is not None}


def setup_django(database_url: str, var_dir: str | Path) -> None:
    """Point this process at the database, then load Django (settings read the environment once)."""
    os.environ.update(django_env(database_url, var_dir))
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()


def migrate(database_url: str, var_dir: str | Path) -> None:
    log("migrating")
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=REPO_ROOT,
        env=django_env(database_url, var_dir),
        check=True,
    )


def _admin_connection():
    import psycopg

    return psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True)


@contextmanager
def scratch_postgres(purpose: str):
    """A fresh database nli_bench_<purpose>_<pid> on the local server, dropped afterwards whatever happens."""
    name = f"nli_bench_{purpose}_{os.getpid()}"
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    log(f"created database {name}")
    try:
        yield f"{POSTGRES_SERVER}/{name}"
    finally:
        _close_django_connections()
        with _admin_connection() as admin:
            # FORCE ends sessions a killed server or worker thread may have left behind.
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        log(f"dropped database {name}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_accepts(port: int, seconds: float) -> bool:
    """Whether something listens on 127.0.0.1:port within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def session_processes(session: int) -> dict[int, list[str]]:
    """The /proc/<pid>/stat fields after the command name (state, ppid, ..., see proc(5)) of each living
    process of a session."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:
            found[int(entry)] = fields
    return found


# The secret key of the production-shaped server (AppServer.production): a process that signs what the
# server reads (a session) needs the same one.
PRODUCTION_SECRET_KEY = "benchmark-secret-key-not-for-production"


class AppServer:
    """bin/serve on a free port, in a session of its own, its output in <var_dir>/server.log, with
    django_env()'s environment plus `env` (None removes a variable). `production()` is the deployed shape
    (the benchmarks and tests/faults); the browser tests run it on SQLite as `make demo` does."""

    def __init__(self, var_dir: str | Path, processes: int = 1, database_url: str | None = None, **env: str | None):
        self.port = free_port()
        self.processes = processes
        self.var_dir = Path(var_dir)
        self.log_path = self.var_dir / "server.log"
        self.env = django_env(
            database_url,
            var_dir,
            PY=PYTHON,
            HOST="127.0.0.1",
            PORT=str(self.port),
            WEB_CONCURRENCY=str(processes),
            **env,
        )
        self.process: subprocess.Popen | None = None

    @classmethod
    def production(cls, database_url: str, var_dir: str | Path, processes: int, **env: str | None) -> AppServer:
        """Production mode against `database_url`: no demo, no migrate, DEBUG off."""
        return cls(
            var_dir,
            processes,
            database_url,
            DEBUG="false",
            SECRET_KEY=PRODUCTION_SECRET_KEY,
            ALLOWED_HOSTS="127.0.0.1",
            DEMO="0",
            MIGRATE="0",
            **env,
        )

    def start(self, seconds: float = 180) -> AppServer:
        self.launch()
        self.wait_until_serving(seconds)
        return self

    def launch(self) -> None:
        """Start bin/serve without waiting for it (several servers can then start side by side)."""
        self.var_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as server_log:
            self.process = subprocess.Popen(
                [str(REPO_ROOT / "bin" / "serve")],
                cwd=REPO_ROOT,
                env=self.env,
                stdout=server_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_until_serving(self, seconds: float = 180) -> None:
        """Returns once the server answers HTTP; raises with the log's tail if it exits or stays silent."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"bin/serve exited with {self.process.returncode}: {self.log_tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", "/api/projects/")
                connection.getresponse().read()
                connection.close()
                time.sleep(1.0 if self.processes > 1 else 0)  # the other processes are a moment behind the first
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"bin/serve did not answer on port {self.port} within {seconds:g} s: {self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL to the whole session, as a crash or an out-of-memory kill would end it."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM to the whole session (shell, uvicorn and its processes, task worker, expiry loop)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # anything of the session still alive
        except ProcessLookupError:
            pass

    def web_processes(self) -> list[int]:
        """The uvicorn web processes: the children uvicorn's supervisor spawned (multiprocessing)."""
        processes = session_processes(self.process.pid)
        commands = {pid: _command_line(pid) for pid in processes}
        supervisors = {pid for pid, command in commands.items() if "uvicorn" in command}
        return sorted(
            pid for pid, fields in processes.items() if int(fields[1]) in supervisors and "spawn_main" in commands[pid]
        )

    def log_tail(self, lines: int | None = 30) -> str:
        """The last `lines` lines of the server's log (None: all of it)."""
        with open(self.log_path, errors="replace") as server_log:
            return "".join(server_log.readlines()[-lines if lines else 0 :])


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as command:
            return command.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@contextmanager
def django_on_scratch_database(purpose: str, database: str = "postgres"):
    """A scratch database (PostgreSQL: see scratch_postgres; SQLite: a file in the var folder), migrated,
    with this process's Django set up on it and a temporary NLI_STUDIO_VAR folder; yields (URL, var folder)."""
    with (
        tempfile.TemporaryDirectory(prefix=f"nli-bench-{purpose}-") as var_dir,
        (
            scratch_postgres(purpose)
            if database == "postgres"
            else nullcontext(f"sqlite:///{var_dir}/{purpose}.sqlite3")
        ) as url,
    ):
        migrate(url, var_dir)
        setup_django(url, var_dir)
        yield url, var_dir


def _close_django_connections() -> None:
    if "django.db" in sys.modules and os.environ.get("DJANGO_SETTINGS_MODULE"):
        from django.db import connections

        connections.close_all()


def make_workers(count: int, prefix: str = "worker"):
    """`count` users with the worker role and no usable password (no hashing: they are made by the dozen)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from core.roles import WORKER

    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"{prefix}{index}", password="!") for index in range(count)]
    )
    group, _ = Group.objects.get_or_create(name=WORKER)
    group.user_set.add(*users)
    return users


def make_author(username: str = "bench-author"):
    from django.contrib.auth import get_user_model

    from core.roles import AUTHOR, grant_role

    author = get_user_model().objects.create_user(username=username)
    grant_role(author, AUTHOR)
    return author


def series_sql(count_placeholder: str = "%s") -> str:
    """A FROM clause yielding n = 1..count, on PostgreSQL and on SQLite."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return f"generate_series(1, {count_placeholder}) AS s(n)"
    return (
        "(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < "
        f"{count_placeholder}) SELECT n FROM s) AS s"
    )


def insert_select(model, given: dict[str, str], source_sql: str, params: list) -> int:
    """INSERT INTO model's table SELECT ... FROM source_sql, one row per source row.

    `given` maps column names to SQL expressions over the source (without parameters;
    a literal % is written %%); every other
    column gets the model field's default, because Django keeps defaults in Python, not in the schema.
    Returns the row count.
    """
    from django.db import connection
    from django.utils import timezone

    columns, expressions, default_params = [], [], []
    for model_field in model._meta.concrete_fields:
        if model_field.primary_key:
            continue
        columns.append(connection.ops.quote_name(model_field.column))
        if model_field.column in given:
            expressions.append(given[model_field.column])
            continue
        if getattr(model_field, "auto_now", False) or getattr(model_field, "auto_now_add", False):
            value = timezone.now()
        else:
            value = model_field.get_default()
        # PostgreSQL types a bare parameter in a SELECT list as text; SQLite needs (and wants) no cast.
        cast = model_field.cast_db_type(connection) if connection.vendor == "postgresql" else None
        expressions.append(f"CAST(%s AS {cast})" if cast else "%s")
        default_params.append(model_field.get_db_prep_save(value, connection))
    unknown = set(given) - {f.column for f in model._meta.concrete_fields}
    if unknown:
        raise ValueError(f"{model.__name__} has no column(s) {', '.join(sorted(unknown))}")
    sql = (
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({', '.join(columns)}) "
        f"SELECT {', '.join(expressions)} FROM {source_sql}"
    )
    with connection.cursor() as cursor:
        # The defaults' placeholders come first in the statement, the source's after them.
        cursor.execute(sql, default_params + list(params))
        return cursor.rowcount


def bulk_items(project, count: int, **item_columns: str) -> None:
    """Insert `count` examples with one item each into `project` in SQL (no Python object per row).

    `item_columns` overrides item columns with SQL expressions (over the example row `e`).
    """
    from django.db import transaction

    from annotation.models import Example, Item

    with transaction.atomic():
        insert_select(
            Example,
            {
                "project_id": str(int(project.pk)),
                "key": "'bench-' || n",
                "source_id": "'' || n",
                "premise": "'A premise sentence number ' || n || ' about a dog in a park.'",
                "hypothesis": "'A hypothesis sentence number ' || n || '.'",
                "position": "n",
            },
            series_sql(),
            [count],
        )
        insert_select(
            Item,
            {
                "project_id": str(int(project.pk)),
                "example_id": "e.id",
                "target": str(int(project.redundancy)),
                **item_columns,
            },
            f"annotation_example e WHERE e.project_id = {int(project.pk)} ORDER BY e.id",
            [],
        )
    from dataset_io.services.import_writing import analyze_imported_tables

    analyze_imported_tables()  # what an import does: a whole-database ANALYZE would mark the claims "empty"


def analyze() -> None:
    """Fresh planner statistics after a bulk load (PostgreSQL would otherwise guess from an empty table)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (p99 of 100 values is the 99th smallest)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]
