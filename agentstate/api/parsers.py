"""The JSON parser, with the body limit DRF does not apply when it streams a JSON body, and the
nesting limit the standard parser lacks."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers, status

from agentstate.validation import check_json_text_depth

BODY_FIELD = "body"


class PayloadTooLarge(exceptions.APIException):
    """Defined here, not beside the error handler: DRF imports this module while its views module
    loads, and the handler imports those views (a cycle whenever the handler is imported first)."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


class JSONParser(parsers.JSONParser):
    """Refuses bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` with a 413, whatever Content-Length
    claims, before parsing a byte of them; and bodies nesting deeper than ``MAX_BODY_DEPTH`` with a
    400 naming ``body`` (the standard parser recurses until Python's stack runs out: a 500)."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(body) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        check_json_text_depth(body, field=BODY_FIELD)
        return super().parse(io.BytesIO(body), media_type, parser_context)
