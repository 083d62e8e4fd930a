from django.apps import AppConfig


class AccessLogConfig(AppConfig):
    """The access log (``userdata_app.access_log``): the platform's admin and API bases tell it what
    staff and compliance keys read (``agentstate.access``); the erasure services write their steps."""

    name = "userdata_app.access_log"
    label = "access_log"
    verbose_name = "Access log"

    def ready(self) -> None:
        from django.core import checks

        from agentstate import access
        from userdata_app.access_log import chain, recorder

        access.register(recorder.AccessRecorder())
        checks.register(chain.check_log_kept, checks.Tags.security, deploy=True)
