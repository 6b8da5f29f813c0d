from __future__ import annotations

from django.urls import path

from datasets import views

app_name = "datasets"
urlpatterns = [
    path("", views.dataset_list, name="list"),
    path("upload/", views.dataset_upload, name="upload"),
    path("<int:pk>/", views.dataset_detail, name="detail"),
    # An example's external id is unique within its (immutable) version and may hold any character.
    path("<int:pk>/versions/<int:number>/items/<path:external_id>/", views.example_detail, name="example"),
]
