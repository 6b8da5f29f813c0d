from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from evalsite.roles import ROLES
from evalsite.services import user_create_or_update


class Command(BaseCommand):
    help = "Create (or reset) a user with a role: viewer, reviewer or admin."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, default="viewer")
        parser.add_argument("--password", required=True)

    def handle(self, *args, username: str, role: str, password: str, **options):
        if len(password) < 8:
            raise CommandError("--password must be at least 8 characters")
        _, created = user_create_or_update(username=username, password=password, role=role)
        self.stdout.write(f"{'Created' if created else 'Updated'} {role} {username!r}")
