from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from evalsite import views
from evaluations.views.agreement import judge_agreement_page

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("datasets/", include("datasets.urls")),
    path("runs/", include("evaluations.urls")),
    # Before the judges/ include: the page reads evaluations' claims (judges must not import evaluations).
    path("judges/agreement/", judge_agreement_page, name="judge_agreement"),
    path("judges/", include("judges.urls")),
    path("api/", include("api.urls")),
    path("account/", include("api.account_urls")),
    path("targets/", include("targets.urls")),
]
