"""Plumbing shared by every REST endpoint: authentication by API key, the tenant of a request,
the one JSON error shape, cursor pagination, ETags, body limits, the health check."""
