"""Import speed: a synthetic JSONL dataset through datasets.services.dataset_import.

    DEBUG=1 .venv/bin/python bench/import_speed.py [--items 20000] [--contexts 3] [--batch-size N] [--keep]

Writes N items (each with a query, a cited response, a reference answer and `--contexts` contexts) to a
temporary file, imports it into the database DATABASE_URL names, prints items/s and MB/s for the parse
alone and for the whole import, then deletes the dataset again unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from datasets import services  # noqa: E402
from datasets.models import Dataset  # noqa: E402
from datasets.parsing import parse_dataset  # noqa: E402

WORDS = [
    "the",
    "proposal",
    "delegates",
    "voted",
    "quorum",
    "treasury",
    "incentive",
    "program",
    "grant",
    "snapshot",
    "tally",
    "forum",
    "allocation",
    "tokens",
    "protocol",
    "governance",
    "budget",
    "milestone",
    "council",
    "security",
    "upgrade",
    "timeline",
]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def write_dataset(path: Path, *, items: int, contexts: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as file:
        for number in range(1, items + 1):
            context_ids = [f"doc-{number}-{n}" for n in range(1, contexts + 1)]
            item = {
                "id": f"q-{number}",
                "query": sentence(rng, 14).rstrip(".") + "?",
                "response": " ".join(f"{sentence(rng, 16)} [{cid}]" for cid in context_ids),
                "contexts": [
                    {"id": cid, "text": " ".join(sentence(rng, 20) for _ in range(3)), "score": round(rng.random(), 3)}
                    for cid in context_ids
                ],
                "reference_answer": sentence(rng, 30),
                "expected_context_ids": context_ids[:1],
                "tags": [rng.choice(["factual", "multi-hop", "comparison"])],
                "metadata": {"source": "bench"},
            }
            file.write(json.dumps(item) + "\n")


def rate(count: float, seconds: float) -> str:
    return f"{count / seconds:,.0f}" if seconds else "inf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--contexts", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=services.EXAMPLE_BATCH_SIZE)
    parser.add_argument("--keep", action="store_true", help="keep the imported dataset")
    args = parser.parse_args()

    # DEBUG=1 only spares us a SECRET_KEY; the debug cursor's query log would distort the figures.
    settings.DEBUG = False
    services.EXAMPLE_BATCH_SIZE = args.batch_size
    name = f"bench-import-{uuid.uuid4().hex[:8]}"

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        write_dataset(path, items=args.items, contexts=args.contexts)
        megabytes = path.stat().st_size / 1024 / 1024
        settings.DATASET_MAX_UPLOAD_BYTES = max(settings.DATASET_MAX_UPLOAD_BYTES, path.stat().st_size)

        with path.open("rb") as file:
            started = time.perf_counter()
            parse_dataset(file, fmt="jsonl", max_bytes=settings.DATASET_MAX_UPLOAD_BYTES)
            parse_seconds = time.perf_counter() - started

        with path.open("rb") as file:
            started = time.perf_counter()
            result = services.dataset_import(name=name, file=file, filename=path.name)
            import_seconds = time.perf_counter() - started

    try:
        assert result.created and result.version.item_count == args.items
        print(
            f"{args.items:,} items x {args.contexts} contexts, {megabytes:.1f} MB JSONL, "
            f"batch size {args.batch_size}, database {connection.vendor}"
        )
        print(
            f"parse only : {parse_seconds:6.2f} s  {rate(args.items, parse_seconds):>8} items/s  "
            f"{megabytes / parse_seconds:6.1f} MB/s"
        )
        print(
            f"full import: {import_seconds:6.2f} s  {rate(args.items, import_seconds):>8} items/s  "
            f"{megabytes / import_seconds:6.1f} MB/s"
        )
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory: {peak_mb:,.0f} MB (whole process)")
    finally:
        if args.keep:
            print(f"kept dataset {name!r}")
        else:
            Dataset.objects.filter(name=name).delete()


if __name__ == "__main__":
    main()
