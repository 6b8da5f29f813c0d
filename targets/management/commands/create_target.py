"""manage.py create_target: create (or with --update, change) a live target from options or a JSON file.

    manage.py create_target --name rag --url http://127.0.0.1:8100/query \\
        --template '{"query": "{{query}}", "id": "{{id}}"}' \\
        --answer answer --contexts 'sources' --retrieved-ids 'sources[].id' \\
        --header-env Authorization=RAG_TOKEN:'Bearer {}' --timeout 10 --max-concurrency 4 --rpm 600
    manage.py create_target --json target.json      # the same fields as one JSON object (- : stdin)
    manage.py create_target --demo [--url ...]      # the demo target of python -m evalsite.demo_rag

A JSON file holds {"name", "url", "method", "headers", "request_template", "response_mapping",
"timeout_seconds", "max_concurrency", "requests_per_minute"}; options given beside it win.
Errors name the field; nothing is written when one is wrong.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from targets import selectors, services

DEMO_URL = "http://127.0.0.1:8100/query"
FIELDS = ("name", "url", "method", *services.EDITABLE_FIELDS)


class Command(BaseCommand):
    help = "Create a live target (a RAG application to call for each question) from options or a JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", dest="json_path", help="a JSON object with the target's fields (- : stdin)")
        parser.add_argument("--demo", action="store_true", help="the demo target (python -m evalsite.demo_rag)")
        parser.add_argument("--update", action="store_true", help="change the target of that name if it exists")
        parser.add_argument("--name")
        parser.add_argument("--url")
        parser.add_argument("--method", choices=["POST", "GET", "PUT"])
        parser.add_argument("--template", help='the JSON request template, e.g. \'{"query": "{{query}}"}\'')
        parser.add_argument("--answer", help="JMESPath of the answer, e.g. answer or data.output")
        parser.add_argument("--contexts", help="JMESPath of the contexts (strings, or objects with id/text/score)")
        parser.add_argument("--retrieved-ids", help="JMESPath of the retrieved ids in rank order")
        parser.add_argument(
            "--header", action="append", default=[], help="NAME=VALUE, a non-secret header (repeatable)"
        )
        parser.add_argument(
            "--header-env",
            action="append",
            default=[],
            help="NAME=VARIABLE[:FORMAT]: a secret header read from $VARIABLE at call time, e.g. "
            "Authorization=RAG_TOKEN:'Bearer {}' (repeatable)",
        )
        parser.add_argument("--timeout", type=float, dest="timeout_seconds")
        parser.add_argument("--max-concurrency", type=int)
        parser.add_argument("--rpm", type=int, dest="requests_per_minute")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["demo"]:
            target = services.target_demo_ensure(url=options["url"] or DEMO_URL)
            self.stdout.write(self.style.SUCCESS(f"target {target.name}: {target.url}"))
            return
        fields = self._fields(options)
        existing = selectors.target_get(fields.get("name", "")) if fields.get("name") else None
        try:
            if existing is not None and options["update"]:
                changes = {key: value for key, value in fields.items() if key in services.EDITABLE_FIELDS}
                target = services.target_update(target=existing, **changes)
                verb = "updated"
            else:
                missing = [name for name in ("name", "url") if not fields.get(name)]
                if missing:
                    raise CommandError(f"--{missing[0]}: required (or give it in --json)")
                target = services.target_create(**fields)
                verb = "created"
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            raise CommandError(problems) from None
        self.stdout.write(self.style.SUCCESS(f"target {target.name} {verb}: {target.method} {target.url}"))

    def _fields(self, options: dict[str, Any]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if options["json_path"]:
            fields = self._read_json(options["json_path"])
        for name in ("name", "url", "method", "timeout_seconds", "max_concurrency", "requests_per_minute"):
            if options[name] is not None:
                fields[name] = options[name]
        if options["template"] is not None:
            try:
                fields["request_template"] = json.loads(options["template"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--template: not valid JSON: {exc}") from None
        response_mapping = dict(fields.get("response_mapping") or {})
        for key in ("answer", "contexts", "retrieved_ids"):
            if options[key] is not None:
                response_mapping[key] = options[key]
        if response_mapping:
            fields["response_mapping"] = response_mapping
        headers = dict(fields.get("headers") or {})
        for text in options["header"]:
            name, value = self._split(text, "--header", "NAME=VALUE")
            headers[name] = value
        for text in options["header_env"]:
            name, spec = self._split(text, "--header-env", "NAME=VARIABLE[:FORMAT]")
            variable, _, template = spec.partition(":")
            headers[name] = {"env": variable, **({"format": template} if template else {})}
        if headers:
            fields["headers"] = headers
        return fields

    @staticmethod
    def _split(text: str, option: str, shape: str) -> tuple[str, str]:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"{option}: {text!r} is not {shape}")
        return name.strip(), value

    @staticmethod
    def _read_json(path: str) -> dict[str, Any]:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
            data = json.loads(text)
        except OSError as exc:
            raise CommandError(f"--json: cannot read {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"--json: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise CommandError("--json: must hold one JSON object with the target's fields")
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise CommandError(f"--json: unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
        return data
