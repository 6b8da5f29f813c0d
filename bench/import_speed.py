"""Import speed and memory: a synthetic JSONL dataset through datasets.services.dataset_import.

    DEBUG=1 .venv/bin/python bench/import_speed.py [--items 100000] [--contexts 3] [--batch-size N] [--keep]

Writes N items (each with a query, a cited response, a reference answer and `--contexts` contexts) to a
temporary file, then measures, each in a fresh subprocess (so the file's generation and the other
measurement do not count): the parse alone, and the whole import into the database DATABASE_URL names
(the command line's path: no size limit). Prints time, items/s, MB/s and the subprocess's peak memory
(resident set, and how much of it the work added to Django's start-up), then deletes the dataset again
unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from datasets import services  # noqa: E402
from datasets.models import Dataset  # noqa: E402
from datasets.parsing import NO_SIZE_LIMIT, ItemStream  # noqa: E402

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


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(what: str, path: Path, name: str, batch_size: int) -> None:
    """In the subprocess: parse or import the file once; print seconds, peak MB and start-up MB as JSON."""
    services.EXAMPLE_BATCH_SIZE = batch_size
    baseline = peak_mb()
    started = time.perf_counter()
    with path.open("rb") as file:
        if what == "parse":
            for _batch in ItemStream(file, fmt="jsonl", max_bytes=NO_SIZE_LIMIT).batches(batch_size):
                pass
        else:
            result = services.dataset_import(name=name, file=file, filename=path.name, max_bytes=NO_SIZE_LIMIT)
            assert result.created
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb(), "baseline_mb": baseline}))


def run_measure(what: str, path: Path, name: str, batch_size: int) -> dict:
    command = [sys.executable, __file__, "--measure", what, "--file", str(path), "--name", name]
    command += ["--batch-size", str(batch_size)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"the {what} subprocess failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def report(label: str, figures: dict, items: int, megabytes: float) -> None:
    seconds = figures["seconds"]
    print(
        f"{label}: {seconds:6.2f} s  {rate(items, seconds):>8} items/s  {megabytes / seconds:6.1f} MB/s  "
        f"peak memory {figures['peak_mb']:,.0f} MB ({figures['peak_mb'] - figures['baseline_mb']:,.0f} MB over start-up)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--contexts", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=services.EXAMPLE_BATCH_SIZE)
    parser.add_argument("--keep", action="store_true", help="keep the imported dataset")
    parser.add_argument("--measure", choices=["parse", "import"], help=argparse.SUPPRESS)  # the subprocess
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    args = parser.parse_args()

    # DEBUG=1 only spares us a SECRET_KEY; the debug cursor's query log would distort the figures.
    settings.DEBUG = False
    if args.measure:
        measure(args.measure, args.file, args.name, args.batch_size)
        return
    name = f"bench-import-{uuid.uuid4().hex[:8]}"

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        write_dataset(path, items=args.items, contexts=args.contexts)
        megabytes = path.stat().st_size / 1024 / 1024
        parsed = run_measure("parse", path, name, args.batch_size)
        imported = run_measure("import", path, name, args.batch_size)

    try:
        print(
            f"{args.items:,} items x {args.contexts} contexts, {megabytes:.1f} MB JSONL, "
            f"batch size {args.batch_size}, database {connection.vendor}"
        )
        report("parse only ", parsed, args.items, megabytes)
        report("full import", imported, args.items, megabytes)
        assert Dataset.objects.get(name=name).versions.get().item_count == args.items
    finally:
        if args.keep:
            print(f"kept dataset {name!r}")
        else:
            Dataset.objects.filter(name=name).delete()


if __name__ == "__main__":
    main()
