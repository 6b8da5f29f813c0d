"""`manage.py create_api_token USER [--name NAME]`: a new API token for USER, printed as the last word."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.services import token_create


class Command(BaseCommand):
    help = "Create an API token for a user and print it (shown once: only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="created by manage.py", help="a label to tell tokens apart")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r} (create one with manage.py create_user)")
        created = token_create(user=user, name=options["name"])
        self.stdout.write(f"API token for {user.username} (shown once, keep it secret): {created.key}")
