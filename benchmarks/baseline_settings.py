"""Settings of the bare baseline (benchmarks.baseline): the service's database, nothing else."""

from agentstate_site.settings import DATABASES, DEFAULT_AUTO_FIELD, SECRET_KEY  # noqa: F401

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "benchmarks.baseline"
USE_TZ = True
