from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from datasets.parsing import FORMATS, DatasetImportError
from datasets.services import NO_SIZE_LIMIT, dataset_import


class Command(BaseCommand):
    help = (
        "Import a dataset file (JSONL, JSON array or CSV) as the next version of the named dataset. "
        "No size limit (the web upload's DATASET_MAX_UPLOAD_BYTES does not apply)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--name", required=True, help="Dataset name; an existing name gets a new version.")
        parser.add_argument("--format", choices=FORMATS, help="Default: from the file's extension.")

    def handle(self, *args: Any, path: Path, name: str, format: str | None, **options: Any) -> None:
        try:
            with path.open("rb") as file:
                result = dataset_import(name=name, file=file, filename=path.name, fmt=format, max_bytes=NO_SIZE_LIMIT)
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror or exc}") from None
        except DatasetImportError as exc:
            raise CommandError("\n".join([f"{path}: {exc.message}", *(f"  {p}" for p in exc.problems)])) from None
        version = result.version
        if result.created:
            self.stdout.write(
                self.style.SUCCESS(f"Imported {name} version {version.number}: {version.item_count} items.")
            )
        else:
            self.stdout.write(
                f"Unchanged: {name} version {version.number} already holds this content ({version.item_count} items)."
            )
