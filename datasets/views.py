from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from datasets import selectors
from datasets.forms import DatasetUploadForm
from datasets.models import Dataset, DatasetVersion, Example
from datasets.parsing import DatasetImportError
from datasets.services import dataset_import
from evalsite.roles import ADMIN, REVIEWER, has_role

EXAMPLES_PER_PAGE = 25


@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    context = {"datasets": selectors.dataset_list(), "can_upload": has_role(request.user, ADMIN)}
    return render(request, "datasets/dataset_list.html", context)


@require_http_methods(["GET", "POST"])
def dataset_upload(request: HttpRequest) -> HttpResponse:
    if not has_role(request.user, ADMIN):
        raise PermissionDenied("Only admins may upload datasets.")
    import_error: DatasetImportError | None = None
    if request.method == "POST":
        form = DatasetUploadForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                result = dataset_import(
                    name=form.cleaned_data["name"],
                    file=upload,
                    filename=upload.name,
                    fmt=form.cleaned_data["format"] or None,
                    user=request.user,
                )
            except DatasetImportError as exc:
                import_error = exc
            else:
                version = result.version
                if result.created:
                    messages.success(request, f"Imported version {version.number} with {version.item_count} items.")
                else:
                    messages.info(request, f"Nothing new: version {version.number} already holds this content.")
                url = reverse("datasets:detail", args=[version.dataset_id])
                return redirect(f"{url}?version={version.number}")
    else:
        form = DatasetUploadForm(initial={"name": request.GET.get("name", "")})
    context = {"form": form, "import_error": import_error, "max_bytes": settings.DATASET_MAX_UPLOAD_BYTES}
    return render(request, "datasets/dataset_upload.html", context)


@require_GET
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=pk)
    versions = list(selectors.dataset_versions(dataset))
    version = _chosen_version(versions, request.GET.get("version"))
    page = None
    if version is not None:
        page = Paginator(selectors.version_examples(version), EXAMPLES_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "dataset": dataset,
        "versions": versions,
        "version": version,
        "page": page,
        "can_upload": has_role(request.user, ADMIN),
        "can_evaluate": has_role(request.user, REVIEWER),
    }
    return render(request, "datasets/dataset_detail.html", context)


@require_GET
def example_detail(request: HttpRequest, pk: int, number: int, external_id: str) -> HttpResponse:
    try:
        example = selectors.version_example(dataset_id=pk, number=number, external_id=external_id)
    except Example.DoesNotExist:
        raise Http404("No such item in this version.") from None
    previous_id, next_id = selectors.neighbour_ids(example)
    expected = set(example.expected_context_ids)
    context = {
        "example": example,
        "version": example.version,
        "dataset": example.version.dataset,
        "contexts": [
            {
                "id": ctx.get("id"),
                "text": ctx.get("text", ""),
                "score": ctx.get("score"),
                "metadata_json": _pretty_json(ctx.get("metadata")),
                "expected": ctx.get("id") in expected,
            }
            for ctx in example.contexts
        ],
        "retrieved_ids": example.retrieved_ids,
        "context_order": [ctx.get("id") for ctx in example.contexts],
        "metadata_json": _pretty_json(example.metadata),
        "previous_id": previous_id,
        "next_id": next_id,
    }
    return render(request, "datasets/example_detail.html", context)


def _chosen_version(versions: list[DatasetVersion], requested: str | None) -> DatasetVersion | None:
    """The version numbered by ?version=N, else the latest (versions come newest first)."""
    if not requested:
        return versions[0] if versions else None
    for version in versions:
        if str(version.number) == requested:
            return version
    raise Http404("No such version.")


def _pretty_json(value: object) -> str:
    """Indented JSON for a <pre> block; empty for missing or empty values."""
    return json.dumps(value, indent=2, ensure_ascii=False) if value else ""
