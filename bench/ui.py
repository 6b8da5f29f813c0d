"""Server time and SQL queries of the run pages on a finished 10,000-item run (with claims).

    DATABASE_URL=postgres://... .venv/bin/python bench/ui.py [--items 10000] [--repeat 30] [--keep]

Seeds the run straight into the database (bench/seed.py: 10,000 items, 5 metric results and 3
claims each; a second run of the same dataset version, with other scores, for the comparison page),
then requests each page `--repeat` times through Django's test Client (the whole
request: middleware, session, view, template; no network) with DEBUG off, and prints the median
and p95 time and the queries of one request. The seeded dataset, run and judge are deleted
afterwards unless `--keep`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ["DEBUG"] = "0"  # measured as deployed
os.environ.setdefault("SECRET_KEY", "bench-only-signs-nothing-kept")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from bench.seed import seed_finished_run  # noqa: E402
from evaluations.comparison import run_compare  # noqa: E402
from evaluations.models import Run  # noqa: E402

BENCH_USER = "bench-ui"


def measure(label: str, request: Callable[[], object], repeat: int) -> float:
    request()  # warm-up: template compilation, connection
    with CaptureQueriesContext(connection) as queries:
        request()
    query_count = len(queries)  # now: the log is read lazily and the next request clears it
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        request()
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    p95 = timings[min(len(timings) - 1, round(0.95 * (len(timings) - 1)))]
    median = statistics.median(timings)
    print(f"{label:<44} median {median:7.1f} ms   p95 {p95:7.1f} ms   {query_count:3d} queries")
    return median


def measure_comparison(client: Client, base_id: int, candidate_id: int, repeat: int) -> None:
    """The comparison page (issue #12's target: < 1 s with 10,000 items a run), its service alone, the item diff."""
    pair = {"base": base_id, "candidate": candidate_id}
    repeat = max(3, repeat // 3)  # each request reads 20,000 items: fewer samples
    measure("comparison page (/runs/compare/)", lambda: client.get("/runs/compare/", pair), repeat)
    timings, cpu = [], []
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        run_compare(base_id, candidate_id)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
    print(
        f"{'  of which run_compare (the service alone)':<44} median {statistics.median(timings):7.1f} ms   "
        f"CPU {statistics.median(cpu):.0f} ms"
    )
    page_cpu = []
    for _ in range(repeat):
        cpu_started = time.process_time()
        client.get("/runs/compare/", pair)
        page_cpu.append((time.process_time() - cpu_started) * 1000)
    print(f"{'  comparison page, Django CPU':<44} median {statistics.median(page_cpu):7.1f} ms")
    measure(
        "comparison item diff (/runs/compare/item/)",
        lambda: client.get("/runs/compare/item/", {**pair, "example": "q-42"}),
        repeat,
    )
    print(f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the seeded run")
    options = parser.parse_args()
    setup_test_environment()  # the test Client needs 'testserver' in ALLOWED_HOSTS

    start = time.perf_counter()
    run = seed_finished_run(options.items, name="bench-ui")
    print(
        f"seeded run {run.pk}: {options.items} items in {time.perf_counter() - start:.1f} s "
        f"({connection.vendor}, DEBUG off)"
    )
    start = time.perf_counter()
    candidate = seed_finished_run(options.items, name="bench-ui", version=run.dataset_version, salt="candidate:")
    print(f"seeded a second run {candidate.pk} of the same version in {time.perf_counter() - start:.1f} s")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum soon gives a real database
            cursor.execute("ANALYZE evaluations_runitem, evaluations_metricresult, datasets_example")
    user, _ = User.objects.get_or_create(username=BENCH_USER, defaults={"is_superuser": True})
    client = Client()
    client.force_login(user)
    page = f"/runs/{run.pk}/"
    fragment = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "items"}
    filtered = {"sort": "-rubric", "failing": "faithfulness", "tag": "factual"}
    try:
        measure("run page", lambda: client.get(page), options.repeat)
        measure("run page, sorted by overall", lambda: client.get(page, {"sort": "overall"}), options.repeat)
        measure(
            "items table fragment, sorted + filtered", lambda: client.get(page, filtered, **fragment), options.repeat
        )
        measure(
            "items table fragment, text search",
            lambda: client.get(page, {"q": "report 42"}, **fragment),
            options.repeat,
        )
        measure("items table fragment, page 100", lambda: client.get(page, {"page": 100}, **fragment), options.repeat)
        measure(
            "progress fragment",
            lambda: client.get(page, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress"),
            options.repeat,
        )
        measure("runs list", lambda: client.get("/runs/"), options.repeat)
        measure_comparison(client, run.pk, candidate.pk, options.repeat)
        export_start = time.perf_counter()
        response = client.get(f"/runs/{run.pk}/export.csv")
        size = sum(len(chunk) for chunk in response.streaming_content)
        print(
            f"{'CSV export of every item (streamed)':<44} {(time.perf_counter() - export_start) * 1000:7.0f} ms total, "
            f"{size / 1e6:.1f} MB"
        )
    finally:
        if not options.keep:
            dataset = run.dataset_version.dataset
            Run.objects.filter(pk__in=[run.pk, candidate.pk]).delete()
            dataset.delete()
            User.objects.filter(username=BENCH_USER).delete()


if __name__ == "__main__":
    main()
