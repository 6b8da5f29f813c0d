"""Run-engine throughput against the fake LLM server.

    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/throughput.py
        [--items 1000] [--latency-ms 200] [--concurrency 32] [--threads N]
        [--mode in-process|worker] [--worker-processes N] [--steps 1,2,3]
        [--replies canned|offline] [--script FILE] [--keep]

Three runs of faithfulness + relevancy + rubric + correctness (5 judge calls an item):

1. `--items` items at `--latency-ms` (no jitter, no errors), judge max concurrency `--concurrency`:
   calls, wall time, ideal time (calls × latency / concurrency) and efficiency = ideal / actual.
2. The same at 0 ms latency (fresh content, so no cache hit): items/s.
3. Run 1 again, identical: every answer comes from the cache (0 new calls); speed-up over run 1.

The fake server answers every prompt of a kind with one canned reply (`--replies canned`, the
default): a real judge runs on another machine, and here the server shares the two cores with the
engine, so the offline judge's heuristics (`--replies offline`, realistic replies) would bill the
engine's machine for the judge's own thinking (about 1.5 ms of CPU a reply).

`--mode in-process` (default) executes the runs with the engine's in-process executor (the code
path of `evaluate --in-process`: one process, a thread pool of the judge's max concurrency or
`--threads`); `--mode worker` starts the shipped worker command (`make worker`, i.e.
scripts/worker.py: its defaults, or `--worker-processes` processes × `--threads` threads, the
judge's limit shared through Redis) and enqueues the runs for them. Both
use the same item pipeline and gateway. CPU seconds are read from /proc (Linux): the engine's
(this process, or the workers) and the fake server's, per judge call. The datasets and judges
get a random tag and are deleted afterwards unless `--keep`.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
# Measured as deployed: DEBUG off (DEBUG=1 keeps and formats every SQL statement, a cost of its own).
# The workers inherit this environment; the key signs nothing the bench keeps.
os.environ["DEBUG"] = "0"
os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(16).hex())

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from datasets.models import Dataset, DatasetVersion  # noqa: E402
from datasets.services import dataset_import  # noqa: E402
from evaluations.models import FINISHED_STATUSES, Run  # noqa: E402
from evaluations.services import executor, runs  # noqa: E402
from judges.models import JudgeConfig  # noqa: E402
from judges.services import judge_config_create  # noqa: E402

METRICS = ["faithfulness", "relevancy", "rubric", "correctness"]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Processes:
    workers: list[subprocess.Popen] = field(default_factory=list)
    servers: list[subprocess.Popen] = field(default_factory=list)

    def all(self) -> list[subprocess.Popen]:
        return [*self.workers, *self.servers]


@dataclass
class Result:
    run: Run
    wall: float
    engine_cpu: float  # this process (in-process) or the worker processes
    server_cpu: float  # the fake LLM server
    machine_cpu: float  # every process on the machine (/proc/stat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32, help="the judge's max_concurrency")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="engine threads per process (default: --concurrency in-process, WORKER_THREADS's default in worker mode)",
    )
    parser.add_argument("--mode", choices=["in-process", "worker"], default="in-process")
    parser.add_argument(
        "--worker-processes", type=int, default=None, help="default: WORKER_PROCESSES's default (one per core)"
    )
    parser.add_argument("--steps", default="1,2,3", help="which of the three runs (e.g. 2 or 1,3; 3 needs 1)")
    parser.add_argument("--replies", choices=["canned", "offline"], default="canned", help="the fake server's replies")
    parser.add_argument("--script", default=None, help="a --script file for the fake server (overrides --replies)")
    parser.add_argument("--keep", action="store_true", help="keep the datasets, runs and judges")
    args = parser.parse_args()
    steps = {step.strip() for step in args.steps.split(",")}
    if not steps <= {"1", "2", "3"} or ("3" in steps and "1" not in steps):
        parser.error("--steps: give some of 1, 2, 3 (3 re-runs 1, so it needs 1)")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise
    threads = args.threads or args.concurrency  # in-process
    tag = uuid.uuid4().hex[:8]
    database = settings.DATABASES["default"]
    print(
        f"database: {database['ENGINE'].rsplit('.', 1)[-1]} {database['NAME']}; redis: {settings.REDIS_URL or '-'}; "
        f"broker: {settings.CELERY_BROKER_URL}; DEBUG {'on' if settings.DEBUG else 'off'}"
    )
    if args.mode == "worker":
        shape = f"WORKER_PROCESSES={args.worker_processes or 'default'} WORKER_THREADS={args.threads or 'default'}"
        print(f"mode: worker — scripts/worker.py (make worker), {shape}")
    else:
        print(f"mode: in-process — one process, {threads} engine threads")
    print(f"judge max_concurrency {args.concurrency}; {os.cpu_count()} cores; load average {load_average()}")

    script = args.script or (write_canned_script() if args.replies == "canned" else None)
    print(f"fake server replies: {'script ' + args.script if args.script else args.replies}")
    processes = Processes()
    created: list[tuple[JudgeConfig, DatasetVersion]] = []
    try:
        slow_server = start_fake_llm(args.latency_ms, processes, script)
        if args.mode == "worker":
            start_workers(args.worker_processes, args.threads, processes)

        if "1" in steps:
            slow = make_dataset(f"bench-{tag}-a", args.items, tag + "a")
            slow_judge = make_judge(f"bench-{tag}-a", slow_server, args.concurrency)
            created.append((slow_judge, slow))
            first = execute(slow, slow_judge, args.mode, threads, processes, slow_server)
            ideal = first.run.judge_calls * args.latency_ms / 1000 / args.concurrency
            print()
            print(f"1. {args.items} items at {args.latency_ms} ms latency, max concurrency {args.concurrency}")
            report(first)
            print(f"   ideal {ideal:.1f} s (calls × latency / concurrency); efficiency {ideal / first.wall:.2f}")

        if "2" in steps:
            fast_server = start_fake_llm(0, processes, script)
            fast = make_dataset(f"bench-{tag}-b", args.items, tag + "b")
            fast_judge = make_judge(f"bench-{tag}-b", fast_server, args.concurrency)
            created.append((fast_judge, fast))
            zero = execute(fast, fast_judge, args.mode, threads, processes, fast_server)
            print()
            print(f"2. {args.items} items at 0 ms latency")
            report(zero)
            print(f"   {args.items / zero.wall:.0f} items/s, {zero.run.judge_calls / zero.wall:.0f} calls/s")

        if "3" in steps:
            again = execute(slow, slow_judge, args.mode, threads, processes, slow_server)
            print()
            print("3. run 1 again, identical (answers from the cache)")
            report(again)
            print(f"   {again.run.judge_calls} new calls; {first.wall / again.wall:.1f}× faster than run 1")
        print(f"\nload average at the end {load_average()}")
    finally:
        for process in processes.all():
            process.send_signal(signal.SIGTERM if process in processes.workers else signal.SIGKILL)
        for process in processes.all():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        if not args.keep:
            for judge, version in created:
                Run.objects.filter(judge_config=judge).delete()
                Dataset.objects.filter(pk=version.dataset_id).delete()
                judge.delete()


def execute(
    version: DatasetVersion,
    judge: JudgeConfig,
    mode: str,
    threads: int,
    processes: Processes,
    server: subprocess.Popen,
) -> Result:
    engine_before = time.process_time() if mode == "in-process" else cpu_seconds(processes.workers)
    server_before = cpu_seconds([server])
    machine_before = machine_cpu_seconds()
    started = time.monotonic()
    if mode == "in-process":
        run = runs.run_create(dataset_version=version, judge_config=judge, metrics=METRICS, enqueue=False)
        run = executor.run_execute_in_process(run=run, workers=threads)
    else:
        run = runs.run_create(dataset_version=version, judge_config=judge, metrics=METRICS)
        while run.status not in FINISHED_STATUSES:
            time.sleep(0.05)
            run.refresh_from_db()
    wall = time.monotonic() - started
    engine_after = time.process_time() if mode == "in-process" else cpu_seconds(processes.workers)
    machine = machine_cpu_seconds() - machine_before
    return Result(run, wall, engine_after - engine_before, cpu_seconds([server]) - server_before, machine)


def report(result: Result) -> None:
    run = result.run
    lookups = run.judge_calls + run.cache_hits
    print(
        f"   run {run.pk} {run.status}: {run.items_done} items done, {run.items_failed} errors; "
        f"{run.judge_calls} calls, {run.cache_hits} cache hits; wall {result.wall:.2f} s"
    )
    print(
        f"   CPU: engine {result.engine_cpu:.1f} s ({result.engine_cpu / max(lookups, 1) * 1000:.1f} ms a judge call, "
        f"{result.engine_cpu / max(run.items_total, 1) * 1000:.0f} ms an item), fake server {result.server_cpu:.1f} s, "
        f"the rest (PostgreSQL, Redis, this script) {result.machine_cpu - result.engine_cpu - result.server_cpu:.1f} s; "
        f"cores busy {result.machine_cpu / result.wall / (os.cpu_count() or 1):.0%}"
    )


# One reply per prompt kind, valid for every bench item (each answer has two cited sentences).
CANNED_REPLIES = {
    "claim extraction": {"claims": ["The river level rose in spring.", "The water board collected the gauge data."]},
    "claim verification": {
        "verdicts": [
            {"claim": 1, "verdict": "SUPPORTED", "evidence": "the river level rose", "context_ids": ["c1"]},
            {"claim": 2, "verdict": "SUPPORTED", "evidence": "The water board collected", "context_ids": ["c2"]},
        ]
    },
    "relevancy": "YES\nThe answer gives the survey's finding about the river level.",
    "rubric": {
        "faithfulness": 1.0,
        "relevance": 0.9,
        "completeness": 0.8,
        "reasoning_quality": 0.9,
        "improvement_suggestions": ["Say where the gauges were."],
    },
    "correctness": "4\nThe answer gives the reference's rise and adds a supported detail.",
}


def write_canned_script() -> str:
    path = REPO / "var" / "bench" / "canned-replies.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"match": f"You are the {kind} judge", "reply": reply if isinstance(reply, str) else json.dumps(reply)}
        for kind, reply in CANNED_REPLIES.items()
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def start_fake_llm(latency_ms: int, processes: Processes, script: str | None) -> subprocess.Popen:
    command = [sys.executable, "-m", "fakellm", "--port", "0", "--latency-ms", str(latency_ms)]
    command += ["--jitter-ms", "0", "--error-rate", "0"] + (["--script", script] if script else [])
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    processes.servers.append(process)
    line = process.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"http://\S+", line)
    if not match:
        raise SystemExit(f"the fake LLM server did not start: {line!r}")
    process.url = match.group(0).rstrip("/") + "/v1"  # type: ignore[attr-defined]
    return process


def start_workers(count: int | None, threads: int | None, processes: Processes) -> None:
    """The shipped worker command (`make worker`: scripts/worker.py); None keeps its default."""
    logs = REPO / "var" / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    log = (logs / "worker.log").open("w")
    command = [sys.executable, "scripts/worker.py", "--name", f"bench{os.getpid()}-", "-l", "warning"]
    command += ["--without-gossip", "--without-mingle"]
    env = dict(os.environ)
    for name, value in (("WORKER_PROCESSES", count), ("WORKER_THREADS", threads)):
        if value is not None:
            env[name] = str(value)
    processes.workers.append(subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT))
    time.sleep(5)  # start-up: importing Django and connecting to the broker
    print("worker: " + (logs / "worker.log").read_text().split("\n", 1)[0])


def make_dataset(name: str, items: int, nonce: str) -> DatasetVersion:
    lines = []
    for number in range(1, items + 1):
        rise = number % 90 + 10
        lines.append(
            {
                "id": f"q-{number}",
                "query": f"What did survey {number} ({nonce}) find about the river level in spring?",
                "response": (
                    f"Survey {number} found that the river level rose by {rise} cm in spring [c1]. "
                    f"The gauge data behind it were collected daily by the water board [c2]."
                ),
                "contexts": [
                    {"id": "c1", "text": f"Survey {number}: the river level rose by {rise} cm in spring."},
                    {"id": "c2", "text": "The water board collected gauge data daily at three stations."},
                ],
                "reference_answer": f"The river rose by {rise} cm.",
                "expected_context_ids": ["c1"],
                "tags": ["even" if number % 2 == 0 else "odd"],
            }
        )
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return dataset_import(name=name, file=io.BytesIO(content), filename="bench.jsonl", fmt="jsonl").version


def make_judge(name: str, server: subprocess.Popen, concurrency: int) -> JudgeConfig:
    return judge_config_create(
        name=name,
        provider="openai_compatible",
        model="bench-judge",
        base_url=server.url,  # type: ignore[attr-defined]
        max_concurrency=concurrency,
    )


def cpu_seconds(processes: list[subprocess.Popen]) -> float:
    """User + system CPU seconds of running processes and their descendants (Linux /proc); 0 where unavailable."""
    return sum(process_tree_cpu(process.pid) for process in processes)


def process_tree_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return own + sum(process_tree_cpu(int(child)) for child in children)


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores; Linux /proc/stat), 0 where unavailable."""
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    idle, iowait = fields[3], fields[4]
    return (sum(fields[:8]) - idle - iowait) / CLOCK_TICKS


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
