"""Run-engine throughput against the fake LLM server.

    DEBUG=1 DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/throughput.py
        [--items 1000] [--latency-ms 200] [--concurrency 32] [--threads N] [--mode in-process|worker]
        [--worker-processes 1] [--skip-zero] [--keep]

Three runs of faithfulness + relevancy + rubric + correctness (5 judge calls an item):

1. `--items` items at `--latency-ms` (no jitter, no errors), judge max concurrency `--concurrency`:
   calls, wall time, ideal time (calls × latency / concurrency) and efficiency = ideal / actual.
2. The same at 0 ms latency (fresh content, so no cache hit): items/s.
3. Run 1 again, identical: every answer comes from the cache (0 new calls); speed-up over run 1.

`--mode in-process` (default) executes runs with the engine's in-process executor (the code path
of `evaluate --in-process`: a thread pool of the judge's max concurrency, or `--threads`);
`--mode worker` starts `--worker-processes` real Celery workers (`--pool threads -c` threads each)
and enqueues the runs for them. Both use the same item pipeline, gateway and shared Redis limits.
Creates its datasets and judges with a random tag and deletes them afterwards unless `--keep`.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from datasets.models import Dataset, DatasetVersion  # noqa: E402
from datasets.services import dataset_import  # noqa: E402
from evaluations import services  # noqa: E402
from evaluations.models import FINISHED_STATUSES, Run  # noqa: E402
from judges.models import JudgeConfig  # noqa: E402
from judges.services import judge_config_create  # noqa: E402

METRICS = ["faithfulness", "relevancy", "rubric", "correctness"]
CALLS_PER_ITEM = 5  # claim extraction + claim verification, relevancy, rubric, correctness


@dataclass
class Result:
    run: Run
    wall: float
    cpu: float  # this process's CPU seconds (the whole engine in --mode in-process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32, help="the judge's max_concurrency")
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: --concurrency)")
    parser.add_argument("--mode", choices=["in-process", "worker"], default="in-process")
    parser.add_argument("--worker-processes", type=int, default=1)
    parser.add_argument("--skip-zero", action="store_true", help="skip the 0 ms latency run")
    parser.add_argument("--keep", action="store_true", help="keep the datasets, runs and judges")
    parser.add_argument("--script", default=None, help="a --script file for the fake server (default: its own replies)")
    args = parser.parse_args()
    threads = args.threads or args.concurrency
    tag = uuid.uuid4().hex[:8]
    database = settings.DATABASES["default"]
    print(f"database: {database['ENGINE'].rsplit('.', 1)[-1]} {database['NAME']}; redis: {settings.REDIS_URL or '-'}")
    print(f"mode: {args.mode}" + (f" ({args.worker_processes} worker process(es))" if args.mode == "worker" else ""))
    print(f"engine threads: {threads} per process; judge max_concurrency {args.concurrency}; {os.cpu_count()} cores")

    processes: list[subprocess.Popen] = []
    created: list[tuple[JudgeConfig, DatasetVersion]] = []
    try:
        slow_url = start_fake_llm(args.latency_ms, processes, args.script)
        if args.mode == "worker":
            start_workers(args.worker_processes, threads, processes)

        slow = make_dataset(f"bench-{tag}-a", args.items, tag + "a")
        slow_judge = make_judge(f"bench-{tag}-a", slow_url, args.concurrency)
        created.append((slow_judge, slow))
        first = execute(slow, slow_judge, args.mode, threads)
        calls = first.run.judge_calls
        ideal = calls * args.latency_ms / 1000 / args.concurrency
        print()
        print(f"1. {args.items} items at {args.latency_ms} ms latency, max concurrency {args.concurrency}")
        report(first)
        print(f"   ideal {ideal:.1f} s (calls × latency / concurrency); efficiency {ideal / first.wall:.2f}")

        if not args.skip_zero:
            fast_url = start_fake_llm(0, processes, args.script)
            fast = make_dataset(f"bench-{tag}-b", args.items, tag + "b")
            fast_judge = make_judge(f"bench-{tag}-b", fast_url, args.concurrency)
            created.append((fast_judge, fast))
            zero = execute(fast, fast_judge, args.mode, threads)
            print()
            print(f"2. {args.items} items at 0 ms latency")
            report(zero)
            print(f"   {args.items / zero.wall:.0f} items/s, {zero.run.judge_calls / zero.wall:.0f} calls/s")

        again = execute(slow, slow_judge, args.mode, threads)
        print()
        print("3. run 1 again, identical (answers from the cache)")
        report(again)
        print(f"   {again.run.judge_calls} new calls; {first.wall / again.wall:.1f}× faster than run 1")
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM if process.args[0].endswith("celery") else signal.SIGKILL)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        if not args.keep:
            for judge, version in created:
                Run.objects.filter(judge_config=judge).delete()
                Dataset.objects.filter(pk=version.dataset_id).delete()
                judge.delete()


def execute(version: DatasetVersion, judge: JudgeConfig, mode: str, threads: int) -> Result:
    started, cpu = time.monotonic(), time.process_time()
    if mode == "in-process":
        run = services.run_create(dataset_version=version, judge_config=judge, metrics=METRICS, enqueue=False)
        run = services.run_execute_in_process(run=run, workers=threads)
    else:
        run = services.run_create(dataset_version=version, judge_config=judge, metrics=METRICS)
        while run.status not in FINISHED_STATUSES:
            time.sleep(0.05)
            run.refresh_from_db()
    return Result(run=run, wall=time.monotonic() - started, cpu=time.process_time() - cpu)


def report(result: Result) -> None:
    run = result.run
    print(
        f"   run {run.pk} {run.status}: {run.items_done} items done, {run.items_failed} errors; "
        f"{run.judge_calls} calls, {run.cache_hits} cache hits; wall {result.wall:.2f} s; "
        f"{result.cpu:.1f} s CPU in this process"
    )


def start_fake_llm(latency_ms: int, processes: list[subprocess.Popen], script: str | None) -> str:
    command = [sys.executable, "-m", "judges.fakellm", "--port", "0", "--latency-ms", str(latency_ms)]
    command += ["--jitter-ms", "0", "--error-rate", "0"] + (["--script", script] if script else [])
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    processes.append(process)
    line = process.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"http://\S+", line)
    if not match:
        raise SystemExit(f"the fake LLM server did not start: {line!r}")
    return match.group(0).rstrip("/") + "/v1"


def start_workers(count: int, threads: int, processes: list[subprocess.Popen]) -> None:
    celery = str(Path(sys.executable).with_name("celery"))
    logs = REPO / "var" / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    for number in range(1, count + 1):
        log = (logs / f"worker-{number}.log").open("w")
        command = [celery, "-A", "evalsite", "worker", "--pool", "threads", "-c", str(threads), "-l", "warning"]
        command += ["-n", f"bench{number}-{os.getpid()}@%h", "--without-gossip", "--without-mingle"]
        processes.append(subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT))
    time.sleep(4)  # start-up: importing Django and connecting to the broker


def make_dataset(name: str, items: int, nonce: str) -> DatasetVersion:
    lines = []
    for number in range(1, items + 1):
        lines.append(
            {
                "id": f"q-{number}",
                "query": f"What did survey {number} ({nonce}) find about the river level in spring?",
                "response": (
                    f"Survey {number} found that the river level rose by {number % 90 + 10} cm in spring [c1]. "
                    f"The gauge data behind it were collected daily by the water board [c2]."
                ),
                "contexts": [
                    {"id": "c1", "text": f"Survey {number}: the river level rose by {number % 90 + 10} cm in spring."},
                    {"id": "c2", "text": "The water board collected gauge data daily at three stations."},
                ],
                "reference_answer": f"The river rose by {number % 90 + 10} cm.",
                "expected_context_ids": ["c1"],
                "tags": ["even" if number % 2 == 0 else "odd"],
            }
        )
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return dataset_import(name=name, file=io.BytesIO(content), filename="bench.jsonl", fmt="jsonl").version


def make_judge(name: str, url: str, concurrency: int) -> JudgeConfig:
    return judge_config_create(
        name=name, provider="openai_compatible", model="bench-judge", base_url=url, max_concurrency=concurrency
    )


if __name__ == "__main__":
    main()
