"""`manage.py compare`: compare two runs of one dataset and gate CI on "no significant regression".

    manage.py compare BASE_RUN CANDIDATE_RUN [--json PATH] [--fail-on-regression METRIC[,METRIC]]

Prints, per metric (and `overall` when the rubric ran), the base and candidate means, the delta
with its paired bootstrap 95% interval, whether it is significant, the pairs compared and the
pass/fail flips with McNemar's p; then the examples found in one run only and the settings
that differ. `--json` writes the whole comparison (`evaluations.comparison.run_compare`).

Exit status: 0 no named metric dropped significantly; 1 a metric named in
`--fail-on-regression` dropped significantly (the interval of its delta is below 0); 2 bad
arguments (unknown run, runs of different datasets, a metric neither run compared).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluations.comparison import ComparisonError, MetricComparison, RunComparison, run_compare

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2


def format_comparison(comparison: RunComparison) -> str:
    def number(value: float | None, sign: str = "") -> str:
        return "-" if value is None else f"{value:{sign}.3f}"

    base, candidate = comparison.base, comparison.candidate
    lines = [
        f"base      run {base.id} ({base.name}): {base.dataset}@{base.dataset_version}, judge {base.judge}",
        f"candidate run {candidate.id} ({candidate.name}): {candidate.dataset}@{candidate.dataset_version}, "
        f"judge {candidate.judge}",
    ]
    if comparison.settings.warning:
        lines.append(f"WARNING: {comparison.settings.warning}")
    lines.append(
        f"{'metric':<16} {'base':>7} {'cand.':>7} {'delta':>7} {'95% CI':>17} {'signif.':>7} "
        f"{'pairs':>6} {'errored':>7} {'flips -/+':>10} {'p':>7}"
    )
    for entry in comparison.metrics:
        interval = "-" if entry.ci_low is None else f"[{entry.ci_low:+.3f}, {entry.ci_high:+.3f}]"
        flips = "-" if entry.flips is None else f"{entry.flips.pass_to_fail}/{entry.flips.fail_to_pass}"
        p_value = "-" if entry.flips is None else f"{entry.flips.p_value:.3g}"
        lines.append(
            f"{entry.metric:<16} {number(entry.base_mean):>7} {number(entry.candidate_mean):>7} "
            f"{number(entry.delta, '+'):>7} {interval:>17} {'yes' if entry.significant else 'no':>7} "
            f"{entry.n_pairs:>6} {entry.errored:>7} {flips:>10} {p_value:>7}"
        )
    lines.append(
        f"{comparison.matched} examples matched; {len(comparison.only_in_base)} only in the base run"
        + _examples(comparison.only_in_base)
        + f", {len(comparison.only_in_candidate)} only in the candidate"
        + _examples(comparison.only_in_candidate)
    )
    for row in comparison.settings.rows:
        if row.differs:
            lines.append(f"setting {row.key}: {row.base!r} -> {row.candidate!r}")
    return "\n".join(lines)


def _examples(external_ids: list[str], shown: int = 5) -> str:
    if not external_ids:
        return ""
    more = f", ... {len(external_ids) - shown} more" if len(external_ids) > shown else ""
    return f" ({', '.join(external_ids[:shown])}{more})"


def regressed(entry: MetricComparison) -> bool:
    return entry.significant and entry.delta is not None and entry.delta < 0


class Command(BaseCommand):
    help = "Compare two runs of one dataset; exit 1 when a metric named in --fail-on-regression dropped significantly."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("base_run", help="id of the base run")
        parser.add_argument("candidate_run", help="id of the candidate run")
        parser.add_argument("--json", dest="json_path", default=None, help="write the whole comparison here")
        parser.add_argument(
            "--fail-on-regression",
            default=None,
            help="comma-separated metrics (or overall): exit 1 when one dropped significantly",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        base_id = self._run_id("BASE_RUN", options["base_run"])
        candidate_id = self._run_id("CANDIDATE_RUN", options["candidate_run"])
        gated = [name.strip() for name in (options["fail_on_regression"] or "").split(",") if name.strip()]
        if options["fail_on_regression"] is not None and not gated:
            raise CommandError("--fail-on-regression: give at least one metric name", returncode=EXIT_ERROR)
        try:
            comparison = run_compare(base_id, candidate_id)
        except ComparisonError as exc:
            raise CommandError(str(exc), returncode=EXIT_ERROR) from None
        compared = {entry.metric: entry for entry in comparison.metrics if entry.in_base and entry.in_candidate}
        unknown = [name for name in gated if name not in compared]
        if unknown:
            raise CommandError(
                f"--fail-on-regression: {', '.join(unknown)} not compared (both runs have: {', '.join(compared) or 'none'})",
                returncode=EXIT_ERROR,
            )

        self.stdout.write(format_comparison(comparison))
        dropped = [compared[name] for name in gated if regressed(compared[name])]
        exit_code = EXIT_REGRESSION if dropped else EXIT_OK
        if options["json_path"]:
            document = asdict(comparison) | {"fail_on_regression": gated, "exit_code": exit_code}
            Path(options["json_path"]).write_text(json.dumps(document, indent=2) + "\n")
            self.stdout.write(f"wrote {options['json_path']}")
        if dropped:
            details = ", ".join(
                f"{entry.metric} {entry.delta:+.3f} [{entry.ci_low:+.3f}, {entry.ci_high:+.3f}]" for entry in dropped
            )
            raise CommandError(f"significant regression: {details}", returncode=EXIT_REGRESSION)
        if gated:
            self.stdout.write(f"no significant regression in {', '.join(gated)}")

    @staticmethod
    def _run_id(name: str, value: str) -> int:
        if not value.strip().isdigit():
            raise CommandError(f"{name}: {value!r} is not a run id (a positive number)", returncode=EXIT_ERROR)
        return int(value)
