from __future__ import annotations

from django.urls import path

from targets import views

app_name = "targets"
urlpatterns = [
    path("", views.target_list, name="list"),
    path("new/", views.target_create, name="create"),
    path("<int:pk>/", views.target_detail, name="detail"),
    path("<int:pk>/edit/", views.target_edit, name="edit"),
    path("<int:pk>/check/", views.target_check_view, name="check"),
]
