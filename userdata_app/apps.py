from django.apps import AppConfig


class UserdataAppConfig(AppConfig):
    name = "userdata_app"
    verbose_name = "User data and erasure"
