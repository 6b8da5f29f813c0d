"""manage.py check_target NAME [--query "..."]: call a target once; print what each mapping extracted,
or the exact error (HTTP status, the mapping that found nothing, the body it got) and exit 1."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from targets import selectors
from targets.check import DEFAULT_QUERY, target_check


class Command(BaseCommand):
    help = "Call a live target once (no retries) and show the answer, contexts and retrieved ids its mapping reads."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="target name (or id)")
        parser.add_argument("--query", default="", help=f"the question to send (default: {DEFAULT_QUERY!r})")

    def handle(self, *args: Any, **options: Any) -> None:
        target = selectors.target_get(options["name"])
        if target is None:
            known = ", ".join(selectors.target_names()) or "none yet"
            raise CommandError(
                f"no target named {options['name']!r} (known: {known}); create one with manage.py create_target"
            )
        report = target_check(target, query=options["query"])
        if not report.ok:
            raise CommandError("\n".join(report.lines()))
        first, *rest = report.lines()
        self.stdout.write(self.style.SUCCESS(f"ok: {first}"))
        for line in rest:
            self.stdout.write(line)
