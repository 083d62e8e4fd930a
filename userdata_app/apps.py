from django.apps import AppConfig


class UserdataAppConfig(AppConfig):
    name = "userdata_app"
    verbose_name = "User data and erasure"

    def ready(self) -> None:
        from agentstate.subjects import write_guard_register
        from userdata_app import subject_data
        from userdata_app.erasure.registry import erased_subject_write_guard

        subject_data.declare()
        write_guard_register(erased_subject_write_guard)
