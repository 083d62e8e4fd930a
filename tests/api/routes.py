"""Every route of the API's URL modules, included modules too, with its full regex."""

from django.urls import URLResolver


def api_routes(patterns, prefix: str = ""):
    """(regex of the whole path below /api/v1/, URLPattern) for each route."""
    for pattern in patterns:
        regex = prefix + pattern.pattern.regex.pattern.lstrip("^")
        if isinstance(pattern, URLResolver):
            yield from api_routes(pattern.url_patterns, regex)
        else:
            yield "^" + regex, pattern
