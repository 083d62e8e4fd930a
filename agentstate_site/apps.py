from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class SiteConfig(AppConfig):
    """The project level as an app: its template tags and management commands."""

    name = "agentstate_site"
    label = "agentstate_site"
    verbose_name = "agentstate site"

    def ready(self) -> None:
        from django.conf import settings

        if settings.TRACING:  # once per process, before the first request builds the middleware
            from agentstate_site.tracing import tracing_start

            tracing_start()


class AgentStateAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with agentstate's admin site as ``admin.site`` (named in
    INSTALLED_APPS in its place)."""

    default = False
    default_site = "agentstate_site.admin_site.AgentStateAdminSite"
