from __future__ import annotations

from django.urls import path

from api import account_views

app_name = "account"

urlpatterns = [
    path("tokens/", account_views.token_list, name="tokens"),
    path("tokens/<int:token_id>/revoke/", account_views.token_revoke, name="token_revoke"),
]
