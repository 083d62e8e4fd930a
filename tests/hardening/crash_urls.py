"""The project's URLs plus one view that crashes the way a database error would: its message
quotes the stored value that caused it (tests/hardening/test_logging.py)."""

from django.urls import path

from agentstate_site.urls import urlpatterns as project_urlpatterns

SECRET_IN_ERROR = "credit card 4111-1111-1111-1111"


def crash(request):
    raise ValueError(f'invalid input syntax for type json: "{SECRET_IN_ERROR}"')


urlpatterns = [path("test-crash/", crash), *project_urlpatterns]
