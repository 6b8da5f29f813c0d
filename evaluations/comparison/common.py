"""What both comparisons share: the two runs (same dataset, or ComparisonError), their summary, the
metrics they compare, and the settings diff (judge, provider, model, prompt versions, dataset
version, metrics and every run setting, flattened) with the judge/prompt warning."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evaluations.aggregates import OVERALL
from evaluations.metrics import execution_order, has_overall
from evaluations.models import MetricResult, Run

# Settings rows whose difference means the scores come from another judge or prompt.
JUDGE_KEYS = ("judge", "provider", "model", "temperature")
PROMPT_PREFIX = "prompt."


class ComparisonError(ValueError):
    """The two runs cannot be compared (unknown run, different datasets, unknown example)."""


class UnknownRun(ComparisonError):
    """A run id that names no run (a page answers 404, where other comparison errors are 400)."""


class UnknownExample(ComparisonError):
    """An external id in neither run (a page answers 404)."""


@dataclass(frozen=True)
class RunRef:
    id: int
    name: str
    status: str
    dataset_id: int
    dataset: str
    dataset_version: int
    judge_config_id: int
    judge: str
    items_total: int
    created_at: str


@dataclass(frozen=True)
class SettingRow:
    key: str  # judge, model, prompt.faithfulness, metrics, weights.relevance, thresholds.rubric, ...
    base: Any
    candidate: Any
    differs: bool


@dataclass(frozen=True)
class SettingsDiff:
    rows: list[SettingRow]
    judges_or_prompts_differ: bool
    warning: str  # "" when the runs share judge and prompts


def runs_for_comparison(base: Run | int, candidate: Run | int) -> tuple[Run, Run]:
    """Both runs (one query, with dataset and judge); ComparisonError naming the unknown one or the two datasets."""
    ids = {"base": pk(base), "candidate": pk(candidate)}
    runs = Run.objects.select_related("dataset_version__dataset", "judge_config").in_bulk(ids.values())
    for role, run_id in ids.items():
        if run_id not in runs:
            raise UnknownRun(f"{role}: no run with id {run_id}")
    base_run, candidate_run = runs[ids["base"]], runs[ids["candidate"]]
    base_dataset, candidate_dataset = base_run.dataset_version.dataset, candidate_run.dataset_version.dataset
    if base_dataset.pk != candidate_dataset.pk:
        raise ComparisonError(
            f"runs {base_run.pk} and {candidate_run.pk} are of different datasets "
            f"({base_dataset.name!r} and {candidate_dataset.name!r}): compare two runs of the same dataset"
        )
    return base_run, candidate_run


def run_ref(run: Run) -> RunRef:
    return RunRef(
        id=run.pk,
        name=str(run),
        status=run.status,
        dataset_id=run.dataset_version.dataset_id,
        dataset=run.dataset_version.dataset.name,
        dataset_version=run.dataset_version.number,
        judge_config_id=run.judge_config_id,
        judge=run.judge_config.name,
        items_total=run.items_total,
        created_at=run.created_at.isoformat(),
    )


def compared_metrics(base_run: Run, candidate_run: Run) -> list[str]:
    names = execution_order([*base_run.metrics, *candidate_run.metrics])
    return names + ([OVERALL] if has_overall(names) else [])


def ran(name: str, run: Run) -> bool:
    names = execution_order(run.metrics)
    return has_overall(names) if name == OVERALL else name in names


def pk(run: Run | int) -> int:
    return run.pk if isinstance(run, Run) else int(run)


def prompt_versions(run_ids: Iterable[int]) -> dict[int, dict[str, str]]:
    """Per run, per metric: the prompt versions it used, e.g. "claim_extraction@1,claim_verification@1"
    (both versions of a prompt if it changed mid-run)."""
    rows = (
        MetricResult.objects.filter(item__run_id__in=list(run_ids))
        .exclude(prompt_version="")
        .values_list("item__run_id", "metric", "prompt_version")
        .distinct()
        .order_by()
    )
    return joined_versions(rows)


def joined_versions(rows: Iterable[tuple[int, str, str]]) -> dict[int, dict[str, str]]:
    """The union of the prompts each metric used in a run. An item records only the prompts it called
    ("claim_extraction@1" alone when no claim was found to verify), so the union, not the distinct
    combinations, says which prompts the run ran: two runs of the same prompts compare equal."""
    versions: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for run_id, metric, version in rows:
        versions[run_id][metric].update(part.strip() for part in version.split(",") if part.strip())
    return {
        run_id: {metric: ",".join(sorted(found)) for metric, found in by_metric.items() if found}
        for run_id, by_metric in versions.items()
    }


def settings_diff(base: Run, candidate: Run, prompts: Mapping[int, Mapping[str, str]]) -> SettingsDiff:
    """Every setting of the two runs side by side; the judge, its prompts and the run settings flattened."""
    base_values, candidate_values = _setting_values(base, prompts), _setting_values(candidate, prompts)
    keys = list(dict.fromkeys([*base_values, *candidate_values]))
    rows = [
        SettingRow(
            key=key,
            base=base_values.get(key),
            candidate=candidate_values.get(key),
            differs=base_values.get(key) != candidate_values.get(key),
        )
        for key in keys
    ]
    changed = [row.key for row in rows if row.differs and (row.key in JUDGE_KEYS or row.key.startswith(PROMPT_PREFIX))]
    warning = (
        f"These runs used different judges or prompts ({', '.join(changed)}): a score change may come from the "
        "judge, not from the system under test."
        if changed
        else ""
    )
    return SettingsDiff(rows=rows, judges_or_prompts_differ=bool(changed), warning=warning)


def _setting_values(run: Run, prompts: Mapping[int, Mapping[str, str]]) -> dict[str, Any]:
    judge = run.judge_config
    values: dict[str, Any] = {
        "judge": judge.name,
        "provider": judge.provider,
        "model": judge.model,
        "temperature": judge.temperature,
        "dataset_version": run.dataset_version.number,
        "metrics": ", ".join(run.metrics),
        # where the answers came from: the dataset's stored answers, or a live target's (as the run called it)
        "answers": f"target {run.target_config['name']} ({run.target_config['url']})"
        if run.target_config
        else "dataset",
    }
    values |= {f"{PROMPT_PREFIX}{metric}": version for metric, version in sorted(prompts.get(run.pk, {}).items())}
    values |= _flatten(run.settings)
    return values


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, Mapping):
            flat |= _flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat
