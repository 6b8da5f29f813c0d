"""Run comparison speed: `run_compare` on two finished runs of one dataset.

    DATABASE_URL=postgres://... .venv/bin/python bench/compare.py [--items 10000] [--repeat 5] [--keep]

Seeds a dataset of `--items` examples and two finished runs of it (faithfulness, relevancy,
rubric with its citation audit, and the overall score: five compared columns; a few errored
items) with bulk inserts, then times `run_compare` `--repeat` times and prints the median
and the slowest, with the query count and the CPU time of this process (on a busy machine the
wall time mostly measures the wait for a core: the load average is printed too). Target: under 1 s for 10,000 items a run. The data get
a random tag and are deleted afterwards unless `--keep`.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ["DEBUG"] = "0"  # measured as deployed: DEBUG keeps every SQL statement
os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(16).hex())

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from datasets.models import Dataset, DatasetVersion, Example  # noqa: E402
from evaluations.comparison import run_compare  # noqa: E402
from evaluations.models import Run  # noqa: E402
from judges.services import judge_config_create  # noqa: E402
from tests.evaluations.scored_runs import ERROR, scored_run  # noqa: E402

METRICS = ("faithfulness", "relevancy", "rubric")
ERROR_EVERY = 500  # one errored item in 500


def seed_dataset(tag: str, items: int) -> DatasetVersion:
    dataset = Dataset.objects.create(name=f"bench-compare-{tag}")
    version = DatasetVersion.objects.create(
        dataset=dataset, number=1, content_sha256=tag.ljust(64, "0"), source_format="jsonl", item_count=items
    )
    Example.objects.bulk_create(
        [
            Example(
                version=version,
                position=n,
                external_id=f"q-{n}",
                query=f"What did report {n} find about the river?",
                response=f"Report {n} found the river level rose by {n} cm [c1].",
                contexts=[{"id": "c1", "text": f"Report {n}: the river level rose by {n} cm in spring."}],
            )
            for n in range(1, items + 1)
        ],
        batch_size=2000,
    )
    return version


def item_scores(rng: random.Random, items: int, shift: float) -> dict[str, object]:
    scores: dict[str, object] = {}
    for n in range(1, items + 1):
        if n % ERROR_EVERY == 0:
            scores[f"q-{n}"] = ERROR
            continue
        faithfulness = min(1.0, max(0.0, rng.gauss(0.8 + shift, 0.15)))
        rubric = min(1.0, max(0.0, rng.gauss(0.75 + shift, 0.1)))
        scores[f"q-{n}"] = {
            "faithfulness": faithfulness,
            "relevancy": float(rng.random() < 0.9),
            "citation_audit": 1.0,
            "rubric": rubric,
            "overall": (faithfulness + rubric) / 2,
        }
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the dataset, runs and judge")
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    rng = random.Random(1)

    started = time.perf_counter()
    version = seed_dataset(tag, args.items)
    judge = judge_config_create(name=f"bench-compare-{tag}", provider="offline", model="heuristic-v1")
    base = scored_run(version, judge, item_scores(rng, args.items, 0.0), metrics=METRICS, name="base")
    candidate = scored_run(version, judge, item_scores(rng, args.items, -0.01), metrics=METRICS, name="candidate")
    print(f"seeded 2 runs of {args.items} items in {time.perf_counter() - started:.1f} s (DEBUG off)")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum soon gives a real database
            cursor.execute("ANALYZE evaluations_runitem, evaluations_metricresult, datasets_example")

    try:
        timings, cpu = [], []
        for _ in range(args.repeat):
            with CaptureQueriesContext(connection) as queries:
                started, cpu_started = time.perf_counter(), time.process_time()
                comparison = run_compare(base.pk, candidate.pk)
                timings.append(time.perf_counter() - started)
                cpu.append(time.process_time() - cpu_started)
        summary = ", ".join(
            f"{entry.metric} {entry.delta:+.4f}{' (significant)' if entry.significant else ''}"
            for entry in comparison.metrics
            if entry.delta is not None
        )
        print(f"{comparison.matched} pairs; {summary}")
        print(
            f"run_compare: median {statistics.median(timings):.3f} s, slowest {max(timings):.3f} s "
            f"over {args.repeat} repeats, {len(queries)} queries; "
            f"CPU of this process {statistics.median(cpu):.3f} s (median; PostgreSQL's not included)"
        )
        print(f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        if not args.keep:
            Run.objects.filter(pk__in=[base.pk, candidate.pk]).delete()
            version.dataset.delete()
            judge.delete()


if __name__ == "__main__":
    main()
