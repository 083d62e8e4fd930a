"""The house rules of docs/DESIGN.md, "Layers", that code review alone would let slip."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layers import Checkout, lint

ROOT = Path(__file__).resolve().parent.parent


def test_imports_run_one_way():
    """The contracts in pyproject.toml ([tool.importlinter]): the project level on top, then the
    framework backends, userdata_app, sessions_app, the platform, never upwards (and inside each
    backend, people's data over process state), counting the template tag
    libraries a module's templates load as its imports; userdata_app reaches sessions_app through
    its services and selectors, never its models (erasure asks each app to erase its own part);
    the client imports no Django."""
    assert lint(ROOT)


@pytest.mark.servers  # runs in a fresh process
@pytest.mark.parametrize(
    "planted,broken",
    [
        # A new module anywhere in a layer's package is covered the day it is written.
        ({"agentstate/newmod.py": "import sessions_app.models\n"}, "agentstate.newmod -> sessions_app.models"),
        ({"agentstate/tenancy/newmod.py": "import userdata_app\n"}, "agentstate.tenancy.newmod -> userdata_app"),
        (
            {"sessions_app/newmod.py": "from agentstate_site import urls\n"},
            "sessions_app.newmod -> agentstate_site.urls",
        ),
        ({"agentstate/client/newmod.py": "import django\n"}, "agentstate.client.newmod -> django"),
        ({"userdata_app/newmod.py": "import sessions_app.models\n"}, "userdata_app.newmod -> sessions_app.models"),
        # The core names no framework: a backend plugs in, the core does not reach for it.
        (
            {"sessions_app/services/newmod.py": "from backends.langgraph.process import services\n"},
            "sessions_app.services.newmod -> backends.langgraph.process.services",
        ),
        (
            {"userdata_app/newmod.py": "import backends.adk.people.models\n"},
            "userdata_app.newmod -> backends.adk.people.models",
        ),
        # Inside a backend, process state never imports people's data: a module is in its layer by
        # where it stands, in a backend that exists or one written tomorrow.
        (
            {"backends/adk/process/newmod.py": "from backends.adk.people import models\n"},
            "backends.adk.process.newmod -> backends.adk.people.models",
        ),
        (
            {"backends/langgraph/process/newmod.py": "import userdata_app.models\n"},
            "backends.langgraph.process.newmod -> userdata_app.models",
        ),
        (
            {
                "backends/newframework/__init__.py": "",
                "backends/newframework/process/__init__.py": "",
                "backends/newframework/process/models.py": "import backends.adk.people.artifacts.models\n",
            },
            "backends.newframework.process.models -> backends.adk.people.artifacts.models",
        ),
        # A page of sessions_app that pulls in a project-level page whose tag library reads both apps.
        (
            {
                "sessions_app/newmod.py": 'PAGE = "admin/sessions_app/planted.html"\n',
                "templates/admin/sessions_app/planted.html": "{% include 'admin/agentstate_index.html' %}\n",
            },
            "sessions_app.newmod -> agentstate_site.templatetags.agentstate_dashboard",
        ),
        # A template Django's admin picks by its path (admin/<app>/...) is that app's admin's.
        (
            {"templates/admin/userdata_app/change_list.html": "{% load i18n agentstate_dashboard %}\n"},
            "userdata_app.admin -> agentstate_site.templatetags.agentstate_dashboard",
        ),
    ],
)
def test_a_planted_forbidden_import_breaks_the_contracts(tmp_path, planted, broken):
    """The contracts run on a copy of the checkout with one forbidden import planted in it."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy)
    for folder in [*Checkout(ROOT).packages, "templates"]:
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for path, text in planted.items():
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_text(text)

    # A process of its own: this one has already imported the real packages.
    run = subprocess.run(
        [sys.executable, "-m", "tests.layers", str(copy)],
        env={"PYTHONPATH": f"{copy}:{ROOT}", "PATH": "/usr/bin:/bin"},
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert broken in run.stdout


def test_no_test_imports_the_benchmarks():
    """The benchmarks are measurements that come and go (docs/PERFORMANCE.md): what a test needs
    from them lives in the package (agentstate_site.bulk_data) or in tests/, and the benchmarks'
    own command is tested by running it."""
    importing = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        source = path.read_text()
        if "benchmarks" not in source:  # cannot import them: spares parsing some 300 files
            continue
        for node in ast.walk(ast.parse(source)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(name == "benchmarks" or name.startswith("benchmarks.") for name in names):
                importing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not importing, importing


# The packages above the platform, named as code names them (``backends`` as a package: Django's
# ``django.db.backends`` and the English word are not it).
ABOVE_THE_PLATFORM = re.compile(r"\b(?:agentstate_site|sessions_app|userdata_app)\b|(?<![\w.])backends(?=[./]\w|[\"'])")


def test_the_platform_names_nothing_above_it():
    """The platform (agentstate/) is handed what it needs from above (settings, registrations) and
    names no package above it, not even in a string or a comment: the project's wiring (settings,
    WSGI/ASGI, the command) lives in agentstate_site. The client side (agentstate/client,
    agentstate/integrations) talks to the service over HTTP and is held apart by its own contract."""
    client_side = {ROOT / "agentstate" / "client", ROOT / "agentstate" / "integrations"}
    hits = []
    for path in sorted((ROOT / "agentstate").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or client_side & set(path.parents):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if ABOVE_THE_PLATFORM.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)
