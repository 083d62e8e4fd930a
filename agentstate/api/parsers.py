"""The JSON parser, with the body limit DRF does not apply when it streams a JSON body."""
from __future__ import annotations

import io

from django.conf import settings
from rest_framework import parsers

from agentstate.api.errors import PayloadTooLarge


class JSONParser(parsers.JSONParser):
    """Refuses bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` with a 413, whatever Content-Length
    claims, before parsing a byte of them."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and stream is not None:
            body = stream.read(limit + 1)
            if len(body) > limit:
                raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
            stream = io.BytesIO(body)
        return super().parse(stream, media_type, parser_context)
