"""One pagination for every list: `?page=N`, 50 a page, `count`, `next`, `previous`, `results`.

Page numbers are read as the pages read them (`Paginator.get_page`): a number past the end gives
the last page, anything unreadable the first, so a script never trips on a page that just emptied.
Each list has a stable order (a unique key last), so pages never overlap.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response


class ApiPagination(PageNumberPagination):
    page_size = 50

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        self.request = request
        self.page = Paginator(queryset, self.page_size).get_page(request.query_params.get(self.page_query_param))
        return list(self.page)

    def use_page(self, page: Page, request: Request) -> list[Any]:
        """Paginate with a page a selector already cut (the run's items table)."""
        self.request, self.page = request, page
        return list(page.object_list)

    def get_paginated_response(self, data: Any) -> Response:
        return Response(
            {
                "count": self.page.paginator.count,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "results": data,
            }
        )
