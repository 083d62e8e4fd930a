"""The admin Django discovers for this app: each layer's, registered as they are imported."""

from backends.adk.people import admin as people_admin
from backends.adk.people.artifacts import admin as artifacts_admin
from backends.adk.process import admin as process_admin

__all__ = ["artifacts_admin", "people_admin", "process_admin"]
