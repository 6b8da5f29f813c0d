"""`manage.py evaluate`: start a run from a CI pipeline (or a laptop) and gate on its scores.

    manage.py evaluate --dataset NAME[@VERSION] --judge NAME --metrics faithfulness,relevancy
        [--target NAME] [--run-settings JSON] [--name NAME] [--wait | --in-process [--workers N]]
        [--fail-under faithfulness=0.8,overall=0.7] [--allow-errors] [--json PATH]

With `--target`, each item's answer, contexts and retrieved ids come from calling that live target
(targets app); the dataset's reference answers and expected context ids still drive the metrics.

By default the run is queued for the Celery workers; `--wait` follows it to the end.
`--in-process` executes it here with the engine the workers use (a thread pool of the judge's
max concurrency, the same rate limits), for a CI job with no worker.

Run settings are `--run-settings` (`--settings` is taken: manage.py reads it as the Django
settings module before any command sees it).

Exit status: 0 every bar passed; 1 a `--fail-under` bar failed; 2 bad arguments, a run that
failed or was cancelled, items in error (unless `--allow-errors`), or no worker picked the run
up within `--queue-timeout` seconds. A bar compares a metric's mean over the items it covers
(each metric on its own scale: correctness is 1..5) or `overall`, the items' overall score.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings as django_settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from datasets.models import DatasetVersion
from datasets.selectors import DatasetVersionNotFound, dataset_version_by_spec
from evaluations.gates import Bar, BarResult, check_bars_apply, parse_fail_under
from evaluations.metrics.run_settings import resolve_settings
from evaluations.models import FINISHED_STATUSES, Run, RunStatus
from evaluations.reports import GATE_BAR_FAILED, GATE_ERROR, GATE_PASSED, run_gate, run_report, summary_rows
from evaluations.selectors import run_progress
from evaluations.services import executor, runs
from judges.models import JudgeConfig
from judges.selectors import judge_config_get, judge_config_list
from targets.models import Target
from targets.selectors import target_get, target_names, target_summary_line

EXIT_PASSED, EXIT_BAR_FAILED, EXIT_ERROR = GATE_PASSED, GATE_BAR_FAILED, GATE_ERROR
POLL_SECONDS = 0.5
LOG_PROGRESS_SECONDS = 5.0  # progress lines when stderr is not a terminal (CI logs)


def format_table(rows: list[dict[str, Any]]) -> str:
    def number(value: Any) -> str:
        return "–" if value is None else f"{value:.3f}"  # no score, or no threshold to pass

    lines = [f"{'metric':<16} {'mean':>7} {'pass rate':>9} {'covered':>8} {'errored':>8}"]
    for row in rows:
        lines.append(
            f"{row['metric']:<16} {number(row['mean']):>7} {number(row['pass_rate']):>9} "
            f"{row['covered']:>8} {row['errored']:>8}"
        )
    return "\n".join(lines)


class ProgressBar:
    """One self-rewriting line on a terminal; a line every few seconds in a CI log."""

    WIDTH = 30

    def __init__(self, stream: TextIO, run_id: int, *, enabled: bool = True) -> None:
        self.stream = stream
        self.run_id = run_id
        self.enabled = enabled
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self.logged_at = 0.0
        self.last = ""  # the latest line
        self.written = ""  # the latest line written (not on a terminal)
        self.closed = False

    def update(self) -> None:
        progress = run_progress(self.run_id) if self.enabled and not self.closed else None
        if progress is None:
            return
        filled = int(self.WIDTH * progress.items_finished / max(progress.items_total, 1))
        line = (
            f"run {self.run_id} {progress.status:<10} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
            f"{progress.items_finished}/{progress.items_total} items, {progress.items_failed} errors, "
            f"{progress.judge_calls} calls, {progress.cache_hits} cached, {time.monotonic() - self.started:.0f}s"
        )
        if self.tty:
            self.stream.write("\r" + line.ljust(len(self.last)))
            self.stream.flush()
        elif time.monotonic() - self.logged_at >= LOG_PROGRESS_SECONDS:
            self._write(line)
        self.last = line

    def close(self) -> None:
        if self.closed or not self.enabled or not self.last:
            return
        self.closed = True
        if self.tty:
            self.stream.write("\n")
        elif self.last != self.written:
            self._write(self.last)
        self.stream.flush()

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.written = line
        self.logged_at = time.monotonic()


class Command(BaseCommand):
    help = "Start an evaluation run (queued for the workers, or --in-process) and gate on its scores."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="NAME or NAME@VERSION (default: the latest version)")
        parser.add_argument("--judge", required=True, help="name of a judge config")
        parser.add_argument("--metrics", required=True, help="comma-separated metric names")
        parser.add_argument("--target", default=None, help="name of a live target to call for each item's answer")
        # Not --settings: manage.py itself reads that one as the Django settings module.
        parser.add_argument("--run-settings", default=None, help="run settings as JSON, e.g. '{\"repeats\": 3}'")
        parser.add_argument("--name", default="", help="a name for the run")
        parser.add_argument("--wait", action="store_true", help="follow the queued run until it finishes")
        parser.add_argument("--in-process", action="store_true", help="execute the run here, without workers")
        parser.add_argument(
            "--workers", type=int, default=None, help="--in-process threads (default: judge's max concurrency)"
        )
        parser.add_argument("--fail-under", default=None, help="bars, e.g. faithfulness=0.8,overall=0.7")
        parser.add_argument("--allow-errors", action="store_true", help="items in error do not fail the command")
        parser.add_argument("--json", dest="json_path", default=None, help="write the summary and aggregates here")
        parser.add_argument(
            "--queue-timeout",
            type=float,
            default=None,
            help="--wait gives up when no worker starts the run within this many seconds "
            "(default: EVALSITE_QUEUE_TIMEOUT_SECONDS, 60)",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    def handle(self, *args: Any, **options: Any) -> None:
        version = self._dataset_version(options["dataset"])
        judge = self._judge(options["judge"])
        target = self._target(options["target"])
        metrics = self._metrics(options["metrics"])
        run_settings = self._settings(options["run_settings"])
        bars = self._bars(options["fail_under"], metrics)
        if options["workers"] is not None and options["workers"] < 1:
            raise CommandError("--workers: must be at least 1", returncode=EXIT_ERROR)

        run = runs.run_create(
            dataset_version=version,
            judge_config=judge,
            metrics=metrics,
            settings=run_settings,
            name=options["name"] or f"evaluate {version}",
            enqueue=not options["in_process"],
            target=target,
        )
        label = " (offline heuristic, not an LLM)" if judge.is_heuristic else ""
        called = f", answers from target {target.name} ({target.url})" if target is not None else ""
        self.stdout.write(
            f"run {run.pk}: {version} with judge {judge.name}{label}, metrics {', '.join(metrics)}{called}"
        )
        bar = ProgressBar(self.stderr._out, run.pk, enabled=not options["no_progress"])
        try:
            if options["in_process"]:
                run = executor.run_execute_in_process(run=run, workers=options["workers"], on_progress=bar.update)
            elif options["wait"]:
                timeout = options["queue_timeout"] or django_settings.EVALSITE_QUEUE_TIMEOUT_SECONDS
                run = self._follow(run, bar, timeout)
            else:
                self.stdout.write(f"run {run.pk} queued for the workers (add --wait to follow it)")
                self._write_json(options["json_path"], run, [])
                return
        except KeyboardInterrupt:
            bar.close()
            status = Run.objects.get(pk=run.pk).status
            raise CommandError(f"interrupted; run {run.pk} is {status}", returncode=EXIT_ERROR) from None
        except executor.ExecutorError as exc:
            bar.close()
            raise CommandError(f"run {run.pk}: {exc}", returncode=EXIT_ERROR) from None
        finally:
            bar.close()
        self._finish(run, bars, options)

    # --- arguments ---------------------------------------------------------------------------

    def _dataset_version(self, spec: str) -> DatasetVersion:
        try:
            return dataset_version_by_spec(spec)
        except DatasetVersionNotFound as exc:
            raise CommandError(f"--dataset: {exc}", returncode=EXIT_ERROR) from None

    def _judge(self, name: str) -> JudgeConfig:
        judge = judge_config_get(name=name)
        if judge is None:
            known = ", ".join(judge_config_list().values_list("name", flat=True)[:20]) or "none"
            raise CommandError(f"--judge: unknown judge {name!r} (known: {known})", returncode=EXIT_ERROR)
        return judge

    def _target(self, name: str | None) -> Target | None:
        if name is None:
            return None
        target = target_get(name)
        if target is None:
            known = ", ".join(target_names()[:20]) or "none; create one with manage.py create_target"
            raise CommandError(f"--target: unknown target {name!r} (known: {known})", returncode=EXIT_ERROR)
        return target

    def _metrics(self, text: str) -> list[str]:
        try:
            return runs.validate_metrics(text)
        except ValueError as exc:
            raise CommandError(f"--{exc}", returncode=EXIT_ERROR) from None

    def _settings(self, text: str | None) -> dict[str, Any] | None:
        if text is None:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--run-settings: not valid JSON: {exc}", returncode=EXIT_ERROR) from None
        try:
            resolve_settings(value)
        except ValueError as exc:
            raise CommandError(f"--run-settings: {exc}", returncode=EXIT_ERROR) from None
        return value

    def _bars(self, text: str | None, metrics: list[str]) -> list[Bar]:
        if text is None:
            return []
        try:
            bars = parse_fail_under(text)
            check_bars_apply(bars, metrics)
        except ValueError as exc:
            raise CommandError(f"--fail-under: {exc}", returncode=EXIT_ERROR) from None
        return bars

    # --- following and reporting -------------------------------------------------------------

    def _follow(self, run: Run, bar: ProgressBar, queue_timeout: float) -> Run:
        queued_since = time.monotonic()
        while True:
            run.refresh_from_db()
            bar.update()
            if run.status in FINISHED_STATUSES:
                return run
            if run.status == RunStatus.QUEUED and time.monotonic() - queued_since > queue_timeout:
                bar.close()
                raise CommandError(
                    f"no worker picked up run {run.pk} within {queue_timeout:g} s: is a worker running? "
                    "(celery -A evalsite worker --pool threads; or use --in-process). The run stays queued.",
                    returncode=EXIT_ERROR,
                )
            time.sleep(POLL_SECONDS)

    def _finish(self, run: Run, bars: list[Bar], options: dict[str, Any]) -> None:
        aggregates = run.aggregates or {}
        rows = summary_rows(aggregates, run.metrics)
        self.stdout.write(format_table(rows))
        wall = aggregates.get("wall_seconds")
        self.stdout.write(
            f"run {run.pk} {run.status}: {run.items_done} done, {run.items_failed} errors of {run.items_total} items; "
            f"{run.judge_calls} judge calls, {run.cache_hits} cached, cost {run.cost}"
            + (f", {wall:.1f} s" if wall is not None else "")
        )
        if aggregates.get("target"):
            self.stdout.write(target_summary_line(aggregates["target"]))
        verdict = run_gate(run, bars, allow_errors=options["allow_errors"])
        results, problem, exit_code = verdict.results, verdict.problem, verdict.exit_code
        for result in results:
            shown = "no score" if result.value is None else f"{result.value:.3f}"
            self.stdout.write(f"{'PASS' if result.passed else 'FAIL'} {result.name} {shown} (bar {result.minimum:g})")
        self._write_json(options["json_path"], run, rows, results, exit_code)
        if problem:
            raise CommandError(problem, returncode=EXIT_ERROR)
        if exit_code == EXIT_BAR_FAILED:
            failed = ", ".join(
                f"{r.name} {'no score' if r.value is None else f'{r.value:.3f}'} < {r.minimum:g}"
                for r in results
                if not r.passed
            )
            raise CommandError(f"fail-under: {failed}", returncode=EXIT_BAR_FAILED)

    def _write_json(
        self,
        path: str | None,
        run: Run,
        rows: list[dict[str, Any]],
        results: list[BarResult] | None = None,
        exit_code: int = EXIT_PASSED,
    ) -> None:
        if not path:
            return
        document = run_report(run, rows, results or (), exit_code)
        Path(path).write_text(json.dumps(document, indent=2, default=str) + "\n")
        self.stdout.write(f"wrote {path}")
