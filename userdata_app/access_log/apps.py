from django.apps import AppConfig


class AccessLogConfig(AppConfig):
    """The access log (``userdata_app.access_log``): the platform's admin and API bases tell it what
    staff and compliance keys read (``agentstate.access``); erasure steps reach it from their events."""

    name = "userdata_app.access_log"
    label = "access_log"
    verbose_name = "Access log"

    def ready(self) -> None:
        from django.core import checks
        from django.db.models.signals import post_save

        from agentstate import access
        from userdata_app.access_log import chain, recorder
        from userdata_app.models import ErasureEvent, ErasureSubject

        access.register(recorder.AccessRecorder())
        checks.register(chain.check_log_kept, checks.Tags.security, deploy=True)
        # Every erasure step writes one event row, wherever it is taken (admin, API, command).
        post_save.connect(recorder.erasure_event_logged, sender=ErasureEvent, dispatch_uid="access_log_erasure")
        post_save.connect(recorder.erasure_subject_logged, sender=ErasureSubject, dispatch_uid="access_log_subject")
