from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class SiteConfig(AppConfig):
    """The project level as an app: its template tags and management commands, and what it wires
    into the apps below it."""

    name = "agentstate_site"
    label = "agentstate_site"
    verbose_name = "agentstate site"

    def ready(self) -> None:
        # Models and admins exist only once the registry is ready (the admin's AppConfig, earlier
        # in INSTALLED_APPS, has registered them by now).
        from django.contrib import admin

        from agentstate_site.adk.admin import session_section
        from sessions_app.admin.sessions import SessionAdmin
        from sessions_app.models import Session
        from userdata_app.admin.user_data import USER_CHANGELIST

        session_admin = admin.site.get_model_admin(Session)
        assert isinstance(session_admin, SessionAdmin)
        # An ADK session's page merges in the user: state (userdata_app), a layer above sessions_app.
        session_admin.adk_section = session_section
        # A session's user id links to that user's user data, which sessions_app does not know.
        session_admin.user_changelists = (*SessionAdmin.user_changelists, USER_CHANGELIST)


class AgentStateAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with agentstate's admin site as ``admin.site`` (named in
    INSTALLED_APPS in its place)."""

    default = False
    default_site = "agentstate_site.admin_site.AgentStateAdminSite"
