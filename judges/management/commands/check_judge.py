"""manage.py check_judge NAME: send the judge one tiny prompt; print its latency, or the exact error (exit 1)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judges import selectors
from judges.checks import judge_check


class Command(BaseCommand):
    help = "Send one tiny relevancy prompt straight to a judge (no cache, no retries) and report the result."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="judge config name")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"]
        config = selectors.judge_config_get(name=name)
        if config is None:
            known = ", ".join(c.name for c in selectors.judge_config_list()) or "none yet"
            raise CommandError(f"no judge named {name!r} (known: {known}); create one with manage.py create_judge")
        report = judge_check(config)
        if not report.ok:
            raise CommandError(report.message)
        self.stdout.write(self.style.SUCCESS(f"ok: {report.message}"))
