from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from evalsite.services import user_create_or_update


class Command(BaseCommand):
    help = "Create (or reset) an admin user. The password comes from --password or $EVALSITE_ADMIN_PASSWORD."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", default=os.environ.get("EVALSITE_ADMIN_PASSWORD", ""))

    def handle(self, *args, username: str, email: str, password: str, **options):
        if len(password) < 8:
            raise CommandError("--password (or $EVALSITE_ADMIN_PASSWORD) must be at least 8 characters")
        _, created = user_create_or_update(username=username, password=password, role="admin", email=email)
        self.stdout.write(f"{'Created' if created else 'Updated'} admin {username!r}")
