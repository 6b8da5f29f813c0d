"""Datasets: list, upload (a file or JSON items, through the importer), one dataset, its versions and examples."""

from __future__ import annotations

import io
import json

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.errors import InvalidInput, PayloadTooLarge
from api.permissions import AdminWrites
from api.schema import paginated, responses
from api.views.base import ApiView
from datasets import selectors
from datasets.models import Dataset
from datasets.parsing import DatasetImportError
from datasets.services import dataset_import

# Room for the multipart envelope around a file of DATASET_MAX_UPLOAD_BYTES.
MULTIPART_OVERHEAD_BYTES = 64 * 1024
PAGE = OpenApiParameter("page", int, description="Page number (50 a page).")


def _dataset(pk: int) -> Dataset:
    dataset = selectors.dataset_list().filter(pk=pk).first()
    if dataset is None:
        raise Http404(f"No dataset with id {pk}.")
    return dataset


class DatasetListView(ApiView):
    permission_classes = [AdminWrites]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(
        operation_id="datasets_list",
        parameters=[PAGE],
        responses=responses({200: paginated(s.DatasetSerializer)}),
    )
    def get(self, request: Request) -> Response:
        paginator = self.paginator()
        page = paginator.paginate_queryset(selectors.dataset_list().order_by("name", "id"), request)
        return paginator.get_paginated_response(s.DatasetSerializer(page, many=True).data)

    @extend_schema(
        operation_id="datasets_upload",
        request={
            "multipart/form-data": s.DatasetUploadFileSerializer,
            "application/json": s.DatasetUploadJsonSerializer,
        },
        responses=responses({201: s.DatasetUploadResultSerializer, 200: s.DatasetUploadResultSerializer}, 413, 415),
        description="Admins. A file (multipart: `file`, `name`, optional `format`) or JSON `{name, items}`. "
        "201 with the new version; 200 with the existing version when the content is identical. "
        "Problems name the line (JSONL), item (JSON, from 0) or data row (CSV) and the field.",
    )
    def post(self, request: Request) -> Response:
        limit = settings.DATASET_MAX_UPLOAD_BYTES
        length = request.META.get("CONTENT_LENGTH") or ""
        if length.isdigit() and int(length) > limit + MULTIPART_OVERHEAD_BYTES:
            raise PayloadTooLarge(_too_large(limit))
        if request.content_type.startswith("application/json"):
            body = s.DatasetUploadJsonSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            content = json.dumps(body.validated_data["items"], ensure_ascii=False).encode()
            if len(content) > limit:
                raise PayloadTooLarge(_too_large(limit))
            name, file, filename, fmt, field = (
                body.validated_data["name"],
                io.BytesIO(content),
                "items.json",
                "json",
                "items",
            )
        else:
            body = s.DatasetUploadFileSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            upload = body.validated_data["file"]
            if upload.size > limit:
                raise PayloadTooLarge(_too_large(limit))
            name, file, filename, fmt, field = (
                body.validated_data["name"],
                upload,
                upload.name,
                body.validated_data.get("format"),
                "file",
            )
        try:
            result = dataset_import(name=name, file=file, filename=filename, fmt=fmt, user=request.user)
        except DatasetImportError as exc:
            problems = [{"where": p.where, "field": p.field, "message": p.message} for p in exc.problems]
            raise InvalidInput(field, [str(p) for p in exc.problems] or [exc.message], problems=problems) from None
        version = result.version
        data = {
            "created": result.created,
            "dataset": s.DatasetSerializer(_dataset(version.dataset_id)).data,
            "version": s.DatasetVersionSerializer(version).data,
        }
        return Response(data, status=201 if result.created else 200)


def _too_large(limit: int) -> str:
    return (
        f"The upload is over the size limit of {limit} bytes (DATASET_MAX_UPLOAD_BYTES); nothing was imported. "
        "Split the dataset, or import it with `manage.py import_dataset` (no size limit)."
    )


class DatasetDetailView(ApiView):
    @extend_schema(operation_id="datasets_retrieve", responses=responses({200: s.DatasetDetailSerializer}))
    def get(self, request: Request, pk: int) -> Response:
        dataset = _dataset(pk)
        dataset.versions_list = list(selectors.dataset_versions(dataset))
        data = s.DatasetSerializer(dataset).data | {
            "versions": s.DatasetVersionSerializer(dataset.versions_list, many=True).data
        }
        return Response(data)


class DatasetVersionListView(ApiView):
    @extend_schema(
        operation_id="datasets_versions_list",
        parameters=[PAGE],
        responses=responses({200: paginated(s.DatasetVersionSerializer)}),
    )
    def get(self, request: Request, pk: int) -> Response:
        dataset = _dataset(pk)
        paginator = self.paginator()
        page = paginator.paginate_queryset(selectors.dataset_versions(dataset), request)
        return paginator.get_paginated_response(s.DatasetVersionSerializer(page, many=True).data)


class ExampleListView(ApiView):
    @extend_schema(
        operation_id="datasets_versions_examples_list",
        parameters=[PAGE],
        responses=responses({200: paginated(s.ExampleSerializer)}),
    )
    def get(self, request: Request, pk: int, number: int) -> Response:
        version = _dataset(pk).versions.filter(number=number).first()
        if version is None:
            raise Http404(f"Dataset {pk} has no version {number}.")
        paginator = self.paginator()
        page = paginator.paginate_queryset(selectors.version_examples_full(version), request)
        return paginator.get_paginated_response(s.ExampleSerializer(page, many=True).data)
