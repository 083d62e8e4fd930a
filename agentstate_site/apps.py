from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class SiteConfig(AppConfig):
    """The project level as an app: its template tags and management commands, and what it wires
    into the apps below it."""

    name = "agentstate_site"
    label = "agentstate_site"
    verbose_name = "agentstate site"

    def ready(self) -> None:
        from django.conf import settings

        if settings.TRACING:  # once per process, before the first request builds the middleware
            from agentstate_site.tracing import tracing_start

            tracing_start()
        # Models and admins exist only once the registry is ready (the admin's AppConfig, earlier
        # in INSTALLED_APPS, has registered them by now).
        from django.contrib import admin

        from backends.adk.process.services import FRAMEWORK as ADK
        from backends.adk.staff import session_section
        from sessions_app.admin.sessions import FrameworkSection, SessionAdmin
        from sessions_app.models import Session

        session_admin = admin.site.get_model_admin(Session)
        assert isinstance(session_admin, SessionAdmin)  # noqa: S101 (narrows the type: SessionAdmin is registered for Session)
        # An ADK session's page merges in the user: state (userdata_app), a layer above sessions_app.
        session_admin.framework_sections[ADK] = FrameworkSection("ADK events and state", session_section)


class AgentStateAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with agentstate's admin site as ``admin.site`` (named in
    INSTALLED_APPS in its place)."""

    default = False
    default_site = "agentstate_site.admin_site.AgentStateAdminSite"
