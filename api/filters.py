"""The runs list's filters (the run page's `RunFilters`), checked by django-filter: a bad value is a 400."""

from __future__ import annotations

import django_filters

from datasets.models import Dataset
from evaluations.models import Run, RunStatus
from evaluations.run_selectors import RunFilters
from judges.models import JudgeConfig


class RunFilterSet(django_filters.FilterSet):
    dataset = django_filters.ModelChoiceFilter(queryset=Dataset.objects.all(), method="keep", label="dataset id")
    judge = django_filters.ModelChoiceFilter(queryset=JudgeConfig.objects.all(), method="keep", label="judge id")
    status = django_filters.ChoiceFilter(choices=RunStatus.choices, method="keep")

    class Meta:
        model = Run
        fields = ["dataset", "judge", "status"]

    def keep(self, queryset, name, value):  # the selector filters (run_selectors.run_list)
        return queryset

    def run_filters(self) -> RunFilters:
        data = self.form.cleaned_data
        return RunFilters(
            dataset=data["dataset"].pk if data.get("dataset") else None,
            judge=data["judge"].pk if data.get("judge") else None,
            status=data.get("status") or "",
        )
