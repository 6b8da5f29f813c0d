"""Target pages: the list, one target with its "Check" button, and the admin-only form."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.roles import ADMIN, REVIEWER, has_role, require_role
from evaluations.run_selectors import runs_of_target
from targets import selectors, services
from targets.check import DEFAULT_QUERY, target_check
from targets.forms import TargetForm
from targets.models import Target


def _get(pk: int) -> Target:
    target = selectors.target_get(pk)
    if target is None:
        raise Http404("No such target.")
    return target


@require_GET
def target_list(request: HttpRequest) -> HttpResponse:
    context = {"targets": selectors.target_list(), "can_edit": has_role(request.user, ADMIN)}
    return render(request, "targets/target_list.html", context)


@require_GET
def target_detail(request: HttpRequest, pk: int) -> HttpResponse:
    target = _get(pk)
    context = {
        "target": target,
        "can_edit": has_role(request.user, ADMIN),
        "can_check": has_role(request.user, REVIEWER),
        "default_query": DEFAULT_QUERY,
        "runs": runs_of_target(target.pk),
    }
    return render(request, "targets/target_detail.html", context)


@require_POST
def target_check_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The same check as `manage.py check_target`; with HTMX only the report, else the page with it."""
    require_role(request.user, REVIEWER, "Checking a target")
    target = _get(pk)
    report = target_check(target, query=request.POST.get("query", ""))
    context = {"target": target, "report": report}
    if request.htmx:
        return render(request, "targets/target_detail.html#check_report", context)
    context |= {"can_edit": has_role(request.user, ADMIN), "can_check": True, "default_query": report.query}
    context["runs"] = runs_of_target(target.pk)
    return render(request, "targets/target_detail.html", context)


@require_http_methods(["GET", "POST"])
def target_create(request: HttpRequest) -> HttpResponse:
    require_role(request.user, ADMIN, "Creating a target")
    form = TargetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            target = services.target_create(name=form.cleaned_data["name"], **form.service_fields())
        except ValidationError as exc:  # a name taken meanwhile
            form._show(exc)
        else:
            messages.success(request, f"Target {target.name} created. Check it once before a run.")
            return redirect("targets:detail", pk=target.pk)
    return render(request, "targets/target_form.html", {"form": form, "target": None})


@require_http_methods(["GET", "POST"])
def target_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require_role(request.user, ADMIN, "Editing a target")
    target = _get(pk)
    form = TargetForm(request.POST or None, instance=_get(pk))
    form.fields["name"].disabled = True
    if request.method == "POST" and form.is_valid():
        try:
            services.target_update(target=target, **form.service_fields())
        except ValidationError as exc:
            form._show(exc)
        else:
            messages.success(request, f"Target {target.name} saved. Past runs keep what they were answered.")
            return redirect("targets:detail", pk=target.pk)
    return render(request, "targets/target_form.html", {"form": form, "target": target})
