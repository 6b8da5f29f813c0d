"""The judges page: configs with their limits, prices and spend; a live check; admins create and edit."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.roles import ADMIN, REVIEWER, has_role, require_role
from judges import selectors, services
from judges.checks import judge_check
from judges.forms import JudgeConfigForm
from judges.models import JudgeConfig


@require_GET
def judge_list(request: HttpRequest) -> HttpResponse:
    context = {
        "judges": selectors.judge_config_list_with_spend(),
        "can_edit": has_role(request.user, ADMIN),
        "can_check": has_role(request.user, REVIEWER),
    }
    return render(request, "judges/judge_list.html", context)


@require_POST
def judge_check_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The same check as `manage.py check_judge`; with HTMX only the result line, else back to the list."""
    require_role(request.user, REVIEWER, "Checking a judge")
    config = get_object_or_404(JudgeConfig, pk=pk)
    report = judge_check(config)
    if request.htmx:
        return render(request, "judges/judge_list.html#check_result", {"report": report, "judge": config})
    (messages.success if report.ok else messages.error)(request, report.message)
    return redirect("judges:list")


@require_http_methods(["GET", "POST"])
def judge_create(request: HttpRequest) -> HttpResponse:
    require_role(request.user, ADMIN, "Creating a judge")
    form = JudgeConfigForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        config = services.judge_config_create(**form.cleaned_data)
        messages.success(request, f"Judge {config.name} created.")
        return redirect("judges:list")
    form.hide_rejected_api_key_env()
    return render(request, "judges/judge_form.html", {"form": form, "judge": None})


@require_http_methods(["GET", "POST"])
def judge_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require_role(request.user, ADMIN, "Editing a judge")
    config = get_object_or_404(JudgeConfig, pk=pk)
    form = JudgeConfigForm(request.POST or None, instance=JudgeConfig.objects.get(pk=pk))
    form.fields["name"].disabled = True
    if request.method == "POST" and form.is_valid():
        changes = {field: form.cleaned_data[field] for field in services.EDITABLE_FIELDS}
        try:
            services.judge_config_update(config=config, **changes)
        except ValidationError as exc:  # the form ran the same validation; kept for a race with another edit
            form.add_error(None, exc)
        else:
            messages.success(request, f"Judge {config.name} saved.")
            return redirect("judges:list")
    form.hide_rejected_api_key_env()
    return render(request, "judges/judge_form.html", {"form": form, "judge": config})
