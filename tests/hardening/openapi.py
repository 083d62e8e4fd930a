"""The API's OpenAPI schema as the tests read it, and the fields of each operation's request:
tests that walk it cover a new endpoint (or a new framework's) without anyone listing it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from agentstate.api.serializers import JSON_TEXT_FORMAT

Path = tuple[str | int, ...]  # where a field sits in a body: ("messages", 0, "role")


@cache
def api_schema() -> dict[str, Any]:
    """The public schema, as /api/schema/ serves it (a fresh copy is the caller's to change)."""
    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


@dataclass(frozen=True)
class Field:
    operation: str  # "post /api/v1/sessions/"
    where: str  # "body" or "query"
    path: Path
    kind: str  # "string", "json" (a JSON document) or "json-text" (JSON carried in a string)

    @property
    def name(self) -> str:
        """The name the API's errors give the field: ``messages[0].role``."""
        return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in self.path).lstrip(".")

    def __str__(self) -> str:
        return f"{self.operation} {self.where}:{self.name or '(body)'}"


def operations() -> dict[str, dict[str, Any]]:
    """``"<method> <path template>"`` -> the operation, for every operation of the API."""
    return {
        f"{method} {path}": operation
        for path, item in api_schema()["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and path.startswith("/api/")
    }


def request_fields() -> list[Field]:
    """Every string, JSON and JSON-text field of every request body, nested ones too, and every
    JSON-text query parameter."""
    fields: list[Field] = []
    for name, operation in operations().items():
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body is not None:
            fields += _fields(name, _resolved(body), ())
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and _is_json_text(parameter.get("schema", {})):
                fields.append(Field(name, "query", (parameter["name"],), "json-text"))
    return fields


def _is_json_text(schema: dict[str, Any]) -> bool:
    """A string holding JSON text (a blank one allowed is a ``oneOf`` with the empty string)."""
    return any(option.get("format") == JSON_TEXT_FORMAT for option in [schema, *schema.get("oneOf", [])])


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = api_schema()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _fields(operation: str, schema: dict[str, Any], path: Path) -> list[Field]:
    kind = schema.get("type")
    if kind == "object" and "properties" in schema:
        return [
            field
            for key, child in schema["properties"].items()
            if not child.get("readOnly")
            for field in _fields(operation, _resolved(child), (*path, key))
        ]
    if kind == "array":
        return _fields(operation, _resolved(schema.get("items", {})), (*path, 0))
    if kind == "string" and "enum" not in schema:
        return [Field(operation, "body", path, "json-text" if _is_json_text(schema) else "string")]
    if kind in (None, "object"):  # free-form: any JSON value, or an object of them
        return [Field(operation, "body", path, "json")]
    return []  # numbers, booleans, enums: the serializer's types refuse anything else
