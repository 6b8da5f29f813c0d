from __future__ import annotations

from django.urls import path

from judges import views

app_name = "judges"
urlpatterns = [
    path("", views.judge_list, name="list"),
    path("new/", views.judge_create, name="create"),
    path("<int:pk>/edit/", views.judge_edit, name="edit"),
    path("<int:pk>/check/", views.judge_check_view, name="check"),
]
