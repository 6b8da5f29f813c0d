"""The new-run form. It only parses input; the rules live in `run_create` and the metrics' settings
validation, whose errors (named by setting key) are put back next to their field."""

from __future__ import annotations

from typing import Any

from django import forms

from datasets.models import DatasetVersion
from evaluations.metrics import METRIC_NAMES
from evaluations.metrics.run_settings import DEFAULT_SETTINGS, MAX_REPEATS, THRESHOLD_RANGES
from evaluations.services.audits import DEFAULT_SIZE as AUDIT_DEFAULT_SIZE
from evaluations.services.audits import MAX_SEED as AUDIT_MAX_SEED
from evaluations.services.audits import MAX_SIZE as AUDIT_MAX_SIZE
from judges.models import JudgeConfig
from targets.models import Target

METRIC_HELP = {
    "faithfulness": "Share of the answer's claims the contexts support (claims and verdicts kept for review).",
    "relevancy": "Does the answer address the question? YES / NO.",
    "rubric": "Faithfulness, relevance, completeness and reasoning in 0..1: the item's overall score.",
    "correctness": "1–5 agreement with the reference answer (items without one are skipped).",
    "citation_audit": "Invalid citation ids and uncited sentences; no judge call.",
    "retrieval": "Hit, reciprocal rank, precision, recall and nDCG of the retrieved ids; no judge call.",
}
DEFAULT_METRICS = ("faithfulness", "relevancy", "rubric")
THRESHOLD_PREFIX = "thresholds__"
WEIGHT_PREFIX = "weights__"


def _number_input() -> forms.NumberInput:
    return forms.NumberInput(attrs={"step": "any"})


class JudgeChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: JudgeConfig) -> str:
        if obj.is_heuristic:
            return f"{obj.name} — offline heuristic, not an LLM ({obj.model})"
        return f"{obj.name} — {obj.provider} {obj.model}"


class RunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Optional; e.g. “prompt v2, k=5”.")
    dataset_version = forms.TypedChoiceField(coerce=int, label="Dataset and version")
    judge_config = JudgeChoiceField(queryset=JudgeConfig.objects.order_by("name"), label="Judge", empty_label=None)
    target = forms.ModelChoiceField(
        queryset=Target.objects.order_by("name"),
        required=False,
        label="Live target",
        empty_label="None: score the dataset's stored answers",
        help_text="Optional: call this RAG application for each question and score what it answers.",
    )
    metrics = forms.MultipleChoiceField(
        choices=[(name, name) for name in METRIC_NAMES],
        widget=forms.CheckboxSelectMultiple,
        initial=list(DEFAULT_METRICS),
    )
    repeats = forms.IntegerField(
        initial=DEFAULT_SETTINGS["repeats"],
        help_text=f"Evaluate each item 1–{MAX_REPEATS} times to measure judge spread.",
    )
    partial_weight = forms.FloatField(
        initial=DEFAULT_SETTINGS["partial_weight"],
        widget=_number_input(),
        help_text="What a partially supported claim counts for in faithfulness (0..1).",
    )

    def __init__(self, *args: Any, versions: list[DatasetVersion], initial_version: int | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.versions = {version.pk: version for version in versions}
        grouped: dict[str, list[tuple[int, str]]] = {}
        for version in versions:
            label = f"{version.dataset.name} · v{version.number} · {version.item_count} items"
            grouped.setdefault(version.dataset.name, []).append((version.pk, label))
        self.fields["dataset_version"].choices = list(grouped.items())
        if initial_version:
            self.fields["dataset_version"].initial = initial_version
        offline = next((judge for judge in self.fields["judge_config"].queryset if judge.is_heuristic), None)
        if offline is not None:
            self.fields["judge_config"].initial = offline.pk
        for metric, (low, high) in THRESHOLD_RANGES.items():
            self.fields[THRESHOLD_PREFIX + metric] = forms.FloatField(
                label=metric,
                initial=DEFAULT_SETTINGS["thresholds"][metric],
                required=False,  # blank: no threshold, so the metric reports a score and no pass/fail
                widget=_number_input(),
                help_text=f"{low:g}–{high:g}; blank: no pass/fail",
            )
        for dimension, weight in DEFAULT_SETTINGS["weights"].items():
            self.fields[WEIGHT_PREFIX + dimension] = forms.FloatField(
                label=dimension.replace("_", " "), initial=weight, widget=_number_input()
            )

    def metric_fields(self) -> list[tuple[forms.BoundField, str]]:
        """The metric checkboxes with their one-line help."""
        return [(choice, METRIC_HELP.get(choice.data["value"], "")) for choice in self["metrics"]]

    def threshold_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name.startswith(THRESHOLD_PREFIX)]

    def weight_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name.startswith(WEIGHT_PREFIX)]

    def clean_dataset_version(self) -> DatasetVersion:
        return self.versions[self.cleaned_data["dataset_version"]]

    def run_settings(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "repeats": data["repeats"],
            "partial_weight": data["partial_weight"],
            "thresholds": {
                name.removeprefix(THRESHOLD_PREFIX): data[name] for name in data if name.startswith(THRESHOLD_PREFIX)
            },
            "weights": {
                name.removeprefix(WEIGHT_PREFIX): data[name] for name in data if name.startswith(WEIGHT_PREFIX)
            },
        }

    def add_settings_error(self, key: str, message: str) -> None:
        """Show an error of `run_create` (its key: `metrics`, `repeats`, `thresholds.rubric`, ...) next to its field."""
        field = key.replace(".", "__")
        if field in self.fields:
            self.add_error(field, message.removeprefix(f"{key}: "))
        elif key in ("thresholds", "weights"):
            prefix = THRESHOLD_PREFIX if key == "thresholds" else WEIGHT_PREFIX
            self.add_error(next(name for name in self.fields if name.startswith(prefix)), message)
        else:
            self.add_error(None, message)


class AuditStartForm(forms.Form):
    """The run page's "Start an audit": how many items to draw, and an optional seed to reproduce a sample."""

    size = forms.IntegerField(
        min_value=1,
        max_value=AUDIT_MAX_SIZE,
        initial=AUDIT_DEFAULT_SIZE,
        label="Items to audit",
        help_text="Drawn at random; all of them if the run has fewer.",
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=AUDIT_MAX_SEED,
        required=False,
        label="Seed",
        help_text="Optional: the same seed draws the same sample.",
    )
