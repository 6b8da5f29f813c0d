"""manage.py create_judge --name N --provider P --model M [...]: create a judge config, or update the named one."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from judges import selectors, services
from judges.models import Provider

# command-line option (argparse dest) -> JudgeConfig field
OPTION_FIELDS = {
    "provider": "provider",
    "model": "model",
    "base_url": "base_url",
    "api_key_env": "api_key_env",
    "rpm": "requests_per_minute",
    "tpm": "tokens_per_minute",
    "max_concurrency": "max_concurrency",
    "input_price": "input_price_per_million",
    "output_price": "output_price_per_million",
    "temperature": "temperature",
    "timeout": "timeout_seconds",
    "max_tokens": "max_tokens",
}
OPTION_OF_FIELD = {field: "--" + option.replace("_", "-") for option, field in OPTION_FIELDS.items()} | {
    "name": "--name"
}


def _price(raw: str) -> Decimal:
    try:
        return Decimal(raw)
    except InvalidOperation:
        raise ValueError(raw) from None


class Command(BaseCommand):
    help = (
        "Create a judge config, or update the one with this name (only the options given change). "
        "The API key is never stored: --api-key-env names the environment variable that holds it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--provider", choices=Provider.values, help="required for a new judge")
        parser.add_argument("--model", help="required for a new judge, e.g. gpt-4.1-mini")
        parser.add_argument("--base-url", help="API base URL, e.g. http://localhost:8000/v1 for vLLM")
        parser.add_argument("--api-key-env", help="name of the environment variable holding the API key")
        parser.add_argument("--rpm", type=int, help="requests per minute (0: no limit)")
        parser.add_argument("--tpm", type=int, help="tokens per minute (0: no limit)")
        parser.add_argument("--max-concurrency", type=int, help="calls in flight at once, all workers together")
        parser.add_argument("--input-price", type=_price, help="price per million input tokens")
        parser.add_argument("--output-price", type=_price, help="price per million output tokens")
        parser.add_argument("--temperature", type=float)
        parser.add_argument("--timeout", type=float, help="seconds to wait for one reply")
        parser.add_argument("--max-tokens", type=int, help="reply budget in tokens")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"]
        changes = {field: options[option] for option, field in OPTION_FIELDS.items() if options[option] is not None}
        for field in ("requests_per_minute", "tokens_per_minute"):
            if changes.get(field) == 0:
                changes[field] = None
        config = selectors.judge_config_get(name=name)
        try:
            if config is None:
                missing = [f"--{option}" for option in ("provider", "model") if options[option] is None]
                if missing:
                    raise CommandError(f"no judge named {name!r} yet: {' and '.join(missing)} required to create it")
                config = services.judge_config_create(name=name, **changes)
                verb = "created"
            else:
                config = services.judge_config_update(config=config, **changes)
                verb = "updated"
        except ValidationError as exc:
            problems = [
                f"{OPTION_OF_FIELD.get(field, field)}: {message}"
                for field, messages in exc.message_dict.items()
                for message in messages
            ]
            raise CommandError("; ".join(problems)) from None
        self.stdout.write(
            self.style.SUCCESS(f"{verb} judge {config.name!r}: {config.provider} {config.model}")
            + (f" at {config.base_url}" if config.base_url else "")
            + (f", key from ${config.api_key_env}" if config.api_key_env else "")
        )
