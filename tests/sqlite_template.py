"""SQLite's test database copied from a migrated template instead of migrated in each pytest-xdist
worker: migrating costs each worker seconds of CPU, a copy milliseconds. The template is what
migrating made (triggers, FTS5 tables, views, the rows post_migrate adds), so the tests see the same
database. It lives in the system's temporary directory under a key of everything that shapes it (the
migrations' files and the project modules they import, the installed apps, Django's and SQLite's
versions): changing any of them makes a new one, which the first worker to need it builds while the
others wait for it. Each use marks it used; a build removes the templates no run used for a day."""

import ast
import fcntl
import hashlib
import importlib.util
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from pathlib import Path

import django
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db.backends.sqlite3.creation import DatabaseCreation
from django.db.migrations.loader import MigrationLoader

ROOT = Path(__file__).resolve().parent.parent
DIRECTORY = Path(tempfile.gettempdir()) / "agentstate-test-databases"
UNUSED_SECONDS = 24 * 3600  # a template unused this long is removed when another is built


def _project_file(module: str) -> Path | None:
    """The file of ``module`` when it is the project's own (not an installed package's)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    path = Path(spec.origin)
    return path if path.is_relative_to(ROOT) and not path.is_relative_to(sys.prefix) else None


def _with_project_imports(paths: list[Path]) -> set[Path]:
    """``paths`` and every project module they import, directly or through each other: a migration's
    SQL may come from the code it imports (agentstate.search)."""
    seen: set[Path] = set()
    pending = list(paths)
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            pending.extend(found for found in map(_project_file, names) if found)
    return seen


def template_sources() -> list[Path]:
    """The files the migrated database is made from: every installed app's migrations and the
    project modules they import."""
    migration_files = []
    for app in apps.get_app_configs():
        module, _ = MigrationLoader.migrations_module(app.label)
        spec = importlib.util.find_spec(module) if module else None
        for location in (spec.submodule_search_locations or []) if spec else []:
            migration_files.extend(sorted(Path(location).glob("*.py")))
    return sorted(_with_project_imports(migration_files))


def template_key() -> str:
    """A digest of what the migrated database depends on."""
    digest = hashlib.sha256()
    installed = [app.name for app in apps.get_app_configs()]
    for part in (django.__version__, sqlite3.sqlite_version, settings.AUTH_USER_MODEL, *installed):
        digest.update(f"{part}\n".encode())
    for path in template_sources():
        # Named where it sits in the checkout or the environment: checkouts side by side share one.
        base = next((base for base in (Path(sys.prefix), ROOT) if path.is_relative_to(base)), path.parent)
        digest.update(f"{path.relative_to(base)}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def migrated_file(path: Path) -> None:
    """A SQLite database file at ``path`` as ``migrate`` makes it: a copy of the template the
    test database was copied from, or migrated where there is none."""
    template = DIRECTORY / f"{template_key()}.sqlite3"
    if template.exists():
        shutil.copyfile(template, path)
    else:
        call_command("migrate", verbosity=0, interactive=False)
        call_command("createcachetable", verbosity=0)


@contextmanager
def _held(lock: Path) -> Iterator[None]:
    """One process at a time (the workers of one run, or of runs side by side)."""
    with lock.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        yield


def _remove_unused(kept: Path) -> None:
    """Each change to the migrations makes a new template: the others go once no run used them for
    ``UNUSED_SECONDS`` (a checkout beside this one, at other migrations, builds its own again)."""
    cutoff = time.time() - UNUSED_SECONDS
    for template in DIRECTORY.glob("*.sqlite3"):
        with suppress(FileNotFoundError):  # another run's clean-up may have taken it
            if template != kept and template.stat().st_mtime < cutoff:
                template.unlink()
                template.with_suffix(".lock").unlink(missing_ok=True)


class TemplateCreation(DatabaseCreation):
    """Django's SQLite test database creation, for an in-memory test database (the default when
    TEST's NAME is unset): copied from the template, built by migrating when there is none."""

    def create_test_db(self, verbosity=1, autoclobber=False, serialize=True, keepdb=False):
        name = self._get_test_db_name()
        if keepdb or not self.is_in_memory_db(name):
            return super().create_test_db(verbosity, autoclobber, serialize, keepdb)
        DIRECTORY.mkdir(exist_ok=True)
        template = DIRECTORY / f"{template_key()}.sqlite3"
        with _held(template.with_suffix(".lock")):
            if not template.exists():
                super().create_test_db(verbosity, autoclobber, serialize, keepdb)
                building = template.with_suffix(f".{os.getpid()}.tmp")
                self.connection.cursor().execute("VACUUM INTO %s", [str(building)])
                building.replace(template)
                _remove_unused(template)
                return name
        self.connection.close()
        settings.DATABASES[self.connection.alias]["NAME"] = name
        self.connection.settings_dict["NAME"] = name
        self.connection.ensure_connection()
        with closing(sqlite3.connect(template)) as source:
            source.backup(self.connection.connection)
        os.utime(template)  # used: kept by the next build's clean-up
        if serialize:
            self.connection._test_serialized_contents = self.serialize_db_to_string()
        call_command("createcachetable", database=self.connection.alias)
        return name
