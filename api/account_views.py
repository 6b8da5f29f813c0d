"""/account/tokens/: a person's API tokens. A new token is shown once, on the page that created it."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from api import selectors, services

TOKEN_NAME_MAX = 100


@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    created = None
    error = ""
    if request.method == "POST":
        name = request.POST.get("name", "").strip()
        if len(name) > TOKEN_NAME_MAX:
            error = f"The name is longer than {TOKEN_NAME_MAX} characters."
        else:
            created = services.token_create(user=request.user, name=name)
    context = {
        "tokens": selectors.user_tokens(request.user),
        "created": created,
        "error": error,
        "docs_url": "/api/docs/",
    }
    response = render(request, "api/tokens.html", context, status=400 if error else 200)
    if created is not None:
        response["Cache-Control"] = "no-store"  # the page holds the token itself
    return response


@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    if services.token_revoke(user=request.user, token_id=token_id):
        messages.success(request, "Token revoked: requests with it now get a 401.")
    else:
        messages.error(request, "No such active token of yours.")
    return redirect("account:tokens")
