"""manage.py check_judge NAME: send the judge one tiny prompt; print its latency, or the exact error (exit 1)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judges import gateway, selectors
from judges.types import JudgeError


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
        where = f"{config.provider} {config.model}" + (f" at {config.base_url}" if config.base_url else "")
        try:
            result = gateway.check(config)
        except JudgeError as exc:
            raise CommandError(f"judge {name!r} ({where}) failed: {exc}") from None
        label = " [offline heuristic, not an LLM]" if config.is_heuristic else ""
        self.stdout.write(
            self.style.SUCCESS(f"ok: judge {name!r} ({where}){label} answered in {result.latency_ms} ms")
            + f" ({result.input_tokens} input + {result.output_tokens} output tokens): {result.value}"
        )
