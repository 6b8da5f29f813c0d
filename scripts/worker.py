"""The production worker: WORKER_PROCESSES Celery worker processes, each `--pool threads`.

    .venv/bin/python scripts/worker.py [--name PREFIX] [celery worker options, e.g. -l warning]

`make worker` and the compose `worker` service run exactly this; `bench/throughput.py --mode
worker` measures it. Why several processes: a judge call is mostly waiting, so threads carry the
concurrency, but one interpreter lock caps one process near 0.7 of the ideal throughput on this
project's bench; one process per core, each with threads, reached 0.85+.

- WORKER_PROCESSES: worker processes (default: the cores this process may run on).
- WORKER_THREADS: threads per process (default 16), i.e. judge calls in flight per process.

Each process is an ordinary `celery -A evalsite worker` named `PREFIX<n>@<host>` (default prefix
"worker"), so every Celery feature (acks late, the reaper thread, remote control) works per process.
SIGTERM, SIGINT or SIGQUIT is forwarded to every process (SIGTERM: Celery's warm shutdown, the
items in hand finish); the launcher waits for all of them and exits 0 when they all stopped cleanly.
If a process dies on its own (a crash, the OOM killer), the launcher stops the others and exits
with an error, so the supervisor (compose's `restart: unless-stopped`) starts a fresh set.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalsite.env import env_int  # noqa: E402

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
DEFAULT_THREADS = 16


def worker_command(number: int, threads: int, prefix: str, options: list[str]) -> list[str]:
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool", "threads"]
    return command + ["--concurrency", str(threads), "-n", f"{prefix}{number}@%h", *options]


def main(argv: list[str]) -> int:
    prefix = "worker"
    if argv[:1] == ["--name"]:
        prefix, argv = argv[1], argv[2:]
    processes = env_int("WORKER_PROCESSES", len(os.sched_getaffinity(0)), minimum=1)
    threads = env_int("WORKER_THREADS", DEFAULT_THREADS, minimum=1)
    print(f"starting {processes} Celery worker process(es) × {threads} threads", flush=True)

    stopping: list[int] = []
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wake the sleep below when a child exits
    for signum in FORWARDED:
        signal.signal(signum, lambda signum, _frame: stopping.append(signum))
    # Own process group: a Ctrl-C reaches the workers once, through the launcher, not twice
    # (Celery takes a second SIGINT as "stop now, drop the work in hand").
    children = [
        subprocess.Popen(worker_command(number, threads, prefix, argv), cwd=REPO, process_group=0)
        for number in range(1, processes + 1)
    ]

    crashed = forwarded = False
    while any(child.poll() is None for child in children):
        died = [child for child in children if child.returncode is not None]
        if died and not stopping:
            print(f"worker process {died[0].pid} exited with {died[0].returncode}: stopping the others", flush=True)
            crashed = True
            stopping.append(signal.SIGTERM)
        if stopping and not forwarded:
            for child in children:
                if child.poll() is None:
                    child.send_signal(stopping[0])
            forwarded = True
        time.sleep(0.2)

    codes = [child.returncode for child in children]
    print(f"worker processes stopped, exit codes {codes}", flush=True)
    return 1 if crashed or any(codes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
