"""Server time of the review pages on a large finished run: the item page, an override (with the recompute), the queue.

    DATABASE_URL=postgres://... .venv/bin/python bench/ui_review.py [--items 10000] [--samples 40] [--drop]

Seeds (once; later runs reuse it) a completed run of `--items` items with ~5 claims each
(`bench/seed_review.py`), then times requests through Django's test client, in this process,
with DEBUG off: median and p95 milliseconds and the SQL query count of

- the item page (`/runs/<id>/items/<item>/?sort=-overall&tag=factual`: previous / next in that sort);
- an override over HTMX (the write, the item's rescore, the run's aggregates recomputed in SQL,
  and the claim + score fragments rendered), and the aggregate recompute on its own;
- the review queue (first page, ordered by need over the whole run), and `n` (its head, a redirect).

`--drop` deletes the seeded run, its dataset and judge.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ["DEBUG"] = "0"  # measured as deployed
os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(16).hex())
os.environ.setdefault("ALLOWED_HOSTS", "testserver")  # the test client's host

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.seed_review import seed_finished_run  # noqa: E402
from datasets.models import Dataset, Example  # noqa: E402
from evalsite.roles import REVIEWER  # noqa: E402
from evalsite.services import user_create_or_update  # noqa: E402
from evaluations.models import Claim, MetricResult, Run, RunItem  # noqa: E402
from evaluations.services.overrides import run_review_aggregates_update  # noqa: E402
from judges.models import JudgeConfig  # noqa: E402

VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_ENOUGH_INFO", "PARTIALLY_SUPPORTED")


def seeded_run(items: int) -> Run:
    name = f"bench-review-{items}"
    run = Run.objects.filter(name=name, status="completed").first()
    if run is not None and run.items_done == items:
        print(f"reusing run {run.pk} ({items} items)")
        return run
    started = time.perf_counter()
    run = seed_finished_run(items=items, claims=4, name=name)
    claims = Claim.objects.filter(item__run=run).count()
    with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would soon give them
        for model in (RunItem, Claim, MetricResult, Example):
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    print(f"seeded run {run.pk}: {items} items, {claims} claims in {time.perf_counter() - started:.1f} s")
    return run


def measure(label: str, samples: int, request: Callable[[int], int]) -> None:
    """Call request(i) `samples` times (after 2 warm-ups); print median / p95 wall ms (Django and the database),
    the median CPU ms of this process alone (Django's share, less sensitive to a busy machine) and the query counts."""
    for i in range(2):
        request(-1 - i)
    times, cpu, counts = [], [], set()
    for i in range(samples):
        with CaptureQueriesContext(connection) as queries:
            started, cpu_started = time.perf_counter(), time.process_time()
            status = request(i)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
        assert status == 200, f"{label}: HTTP {status}"
        counts.add(len(queries))
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(
        f"{label:<34} median {statistics.median(times):7.1f} ms   p95 {p95:7.1f} ms   "
        f"(Django CPU {statistics.median(cpu):5.1f} ms)   queries {'/'.join(map(str, sorted(counts)))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--drop", action="store_true", help="delete the seeded run, dataset and judge, then stop")
    args = parser.parse_args()
    name = f"bench-review-{args.items}"
    if args.drop:
        Run.objects.filter(name=name).delete()
        Dataset.objects.filter(name=name).delete()
        JudgeConfig.objects.filter(name=f"{name}-judge").delete()
        print(f"dropped {name}")
        return

    run = seeded_run(args.items)
    user, _ = user_create_or_update(username="bench-reviewer", password=os.urandom(12).hex(), role=REVIEWER)
    client = Client()
    client.force_login(user)
    rng = random.Random(7)
    item_ids = list(RunItem.objects.filter(run=run).values_list("id", flat=True))
    claims = list(Claim.objects.filter(item__run=run).values_list("id", "item_id"))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{connection.vendor}, DEBUG off, {os.cpu_count()} CPUs, load average {load}")
    print(f"run {run.pk}: {len(item_ids)} items, {len(claims)} claims\n")

    def item_page(_: int) -> int:
        url = f"/runs/{run.pk}/items/{rng.choice(item_ids)}/?sort=-overall&tag=factual"
        return client.get(url).status_code

    def override(i: int) -> int:
        claim_id, item_id = rng.choice(claims)
        url = f"/runs/{run.pk}/items/{item_id}/claims/{claim_id}/review/"
        form = {"action": "override", "verdict": VERDICTS[i % len(VERDICTS)], "reason": "bench"}
        return client.post(url, form, HTTP_HX_REQUEST="true").status_code

    def recompute(_: int) -> int:
        fresh = Run.objects.get(pk=run.pk)
        run_review_aggregates_update(run=fresh, item_id=rng.choice(item_ids))
        return 200

    def queue(_: int) -> int:
        return client.get(f"/runs/{run.pk}/review/").status_code

    def next_to_review(_: int) -> int:
        response = client.get(f"/runs/{run.pk}/review/next/?after={rng.choice(item_ids)}")
        return 200 if response.status_code == 302 else response.status_code

    measure("item page", args.samples, item_page)
    measure("override (HTMX, with recompute)", args.samples, override)
    measure("  run aggregates recompute alone", args.samples, recompute)
    measure("review queue (first page)", args.samples, queue)
    measure("next to review (n, a redirect)", args.samples, next_to_review)


if __name__ == "__main__":
    main()
