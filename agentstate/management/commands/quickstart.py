"""Set up a local instance and serve it: migrate, make the cache table, make sure an admin
login exists (taken from the environment or generated and printed), then run the dev server."""

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Migrate, create the cache table and an admin login, then start the development server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "addrport",
            nargs="?",
            default="127.0.0.1:8000",
            help="Address and port the development server listens on "
            "(default 127.0.0.1:8000; 0.0.0.0:8000 for every interface).",
        )
        parser.add_argument("--no-serve", action="store_true", help="Set up only; do not start the server.")

    def handle(self, *args: Any, addrport: str, no_serve: bool, **options: Any) -> None:
        # runserver's autoreloader runs this command again in a child process: set up once.
        if os.environ.get("RUN_MAIN") != "true":
            call_command("migrate", interactive=False, verbosity=0)
            call_command("createcachetable", verbosity=0)
            self._ensure_admin(url=f"http://{addrport}/admin/")
        if not no_serve:
            call_command("runserver", addrport)

    def _ensure_admin(self, *, url: str) -> None:
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME") or "admin"  # set but empty counts as unset
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD", "")
        users = get_user_model().objects
        user = users.filter(username=username).first()
        if user is not None and not password:
            self.stdout.write(
                f"Admin login: {username} (exists; password unchanged: set DJANGO_SUPERUSER_PASSWORD and run "
                f"quickstart again, or run 'manage.py changepassword {username}')"
            )
            return
        generated = not password
        password = password or secrets.token_urlsafe(12)
        if user is None:
            users.create_superuser(username=username, email="", password=password)
        else:
            user.set_password(password)
            user.save(update_fields=["password"])
        shown = password if generated else "(from DJANGO_SUPERUSER_PASSWORD)"
        self.stdout.write(self.style.SUCCESS(f"Admin login: {username} / {shown}  ->  {url}"))
