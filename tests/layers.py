"""The contracts of pyproject.toml ([tool.importlinter]) over Python imports and templates alike.

A template is code too: a page of sessions_app that does ``{% load some_tag %}`` runs that tag
library's module, and whatever it imports. So the import graph gets one more edge per template
tag library a module reaches through the templates it names (a ``.html`` string: render_to_string,
template_name, inclusion_tag, index_template), followed through their ``{% include %}`` and
``{% extends %}``; a template at ``admin/<app>/...`` is also the app's admin's, which Django's
admin picks by that path. The layer rules then apply unchanged.

Run as ``python -m tests.layers <checkout>`` to lint another tree (the planted-import tests do).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from importlinter import configuration
from importlinter.adapters.building import GraphBuilder
from importlinter.application import use_cases
from importlinter.application.app_config import settings

LOAD = re.compile(r"{%\s*load\s+(.+?)\s*%}")
PULLS = re.compile(r"""{%\s*(?:include|extends)\s+["']([^"']+)["']""")


class Checkout:
    """The root packages of a checkout, their modules, templates and template tag libraries."""

    def __init__(self, root: Path) -> None:
        self.root = root
        options = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
        self.packages: list[str] = options["root_packages"]
        # Settings' order: the top-level folder (DIRS), then each app's templates/ (APP_DIRS).
        app_dirs = (path for package in self.packages for path in (root / package).rglob("templates"))
        self.template_dirs = [root / "templates", *sorted(path for path in app_dirs if path.is_dir())]

    def modules(self) -> Iterator[tuple[str, Path]]:
        for package in self.packages:
            for path in sorted((self.root / package).rglob("*.py")):
                if "templates" not in path.relative_to(self.root).parts:
                    yield ".".join(path.relative_to(self.root).with_suffix("").parts).removesuffix(".__init__"), path

    def template(self, name: str) -> Path | None:
        return next((d / name for d in self.template_dirs if (d / name).is_file()), None)

    def library(self, name: str) -> str | None:
        """The module of a tag library of the root packages; None for Django's and third parties'."""
        for package in self.packages:
            for path in (self.root / package).rglob(f"templatetags/{name}.py"):
                return ".".join(path.relative_to(self.root).with_suffix("").parts)
        return None

    def libraries_loaded(self, name: str, seen: set[str] | None = None) -> Iterator[tuple[str, str]]:
        """(template, library module) for each library ``name`` loads, itself or through the
        templates it includes or extends."""
        seen = set() if seen is None else seen
        path = self.template(name)
        if path is None or name in seen:
            return
        seen.add(name)
        source = path.read_text()
        for load in LOAD.findall(source):
            words = load.split()
            for library in words[-1:] if "from" in words else words:  # {% load tag from library %}
                module = self.library(library)
                if module is not None:
                    yield name, module
        for pulled in PULLS.findall(source):
            yield from self.libraries_loaded(pulled, seen)

    def template_imports(self) -> Iterator[tuple[str, str, str]]:
        """(importer, imported, what) for each library a module reaches through templates."""
        modules = dict(self.modules())
        for module, path in modules.items():
            names = {
                node.value
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".html")
            }
            for name in sorted(names):
                for template, library in self.libraries_loaded(name):
                    yield module, library, f'"{name}": {{% load %}} in {template}'
        for directory in self.template_dirs:
            for package in self.packages:
                if f"{package}.admin" in modules:
                    for path in sorted((directory / "admin" / package).rglob("*.html")):
                        name = str(path.relative_to(directory))
                        for template, library in self.libraries_loaded(name):
                            yield f"{package}.admin", library, f'"{name}" (by path): {{% load %}} in {template}'


class TemplateAwareGraphBuilder(GraphBuilder):
    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout

    def build(self, *args, **kwargs):
        graph = super().build(*args, **kwargs)
        for importer, imported, what in self.checkout.template_imports():
            graph.add_import(importer=importer, imported=imported, line_number=1, line_contents=what)
        return graph


def lint(root: Path) -> bool:
    """True when every contract is kept, templates' tag libraries counted as imports."""
    configuration.configure()
    settings.configure(GRAPH_BUILDER=TemplateAwareGraphBuilder(Checkout(root)))
    try:
        return use_cases.lint_imports(config_filename=str(root / "pyproject.toml"), cache_dir=None, no_logo=True)
    finally:
        configuration.configure()


if __name__ == "__main__":
    sys.exit(0 if lint(Path(sys.argv[1])) else 1)
