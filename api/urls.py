"""/api/: every endpoint answers JSON (401 for anonymous requests, not the login page's redirect)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path, re_path

from api.errors import api_not_found
from api.views import compare, datasets, items, judges, runs, targets
from api.views.base import RedocView, SchemaView, SwaggerView

app_name = "api"


def api(view, **initkwargs):
    """DRF views authenticate themselves (token or session): the site's login redirect stays out of the way."""
    return login_not_required(view.as_view(**initkwargs))


urlpatterns = [
    path("datasets/", api(datasets.DatasetListView), name="dataset-list"),
    path("datasets/<int:pk>/", api(datasets.DatasetDetailView), name="dataset-detail"),
    path("datasets/<int:pk>/versions/", api(datasets.DatasetVersionListView), name="dataset-versions"),
    path(
        "datasets/<int:pk>/versions/<int:number>/examples/",
        api(datasets.ExampleListView),
        name="dataset-version-examples",
    ),
    path("judges/", api(judges.JudgeListView), name="judge-list"),
    path("judges/agreement/", api(judges.AgreementView), name="judge-agreement"),
    path("judges/<int:pk>/", api(judges.JudgeDetailView), name="judge-detail"),
    path("judges/<int:pk>/check/", api(judges.JudgeCheckView), name="judge-check"),
    path("targets/", api(targets.TargetListView), name="target-list"),
    path("targets/<int:pk>/", api(targets.TargetDetailView), name="target-detail"),
    path("targets/<int:pk>/check/", api(targets.TargetCheckView), name="target-check"),
    path("runs/", api(runs.RunListView), name="run-list"),
    path("runs/<int:run_id>/", api(runs.RunDetailView), name="run-detail"),
    path("runs/<int:run_id>/cancel/", api(runs.RunCancelView), name="run-cancel"),
    path("runs/<int:run_id>/resume/", api(runs.RunResumeView), name="run-resume"),
    path("runs/<int:run_id>/rerun-failed/", api(runs.RunRerunFailedView), name="run-rerun-failed"),
    path("runs/<int:run_id>/gate/", api(runs.RunGateView), name="run-gate"),
    path("runs/<int:run_id>/items/", api(items.ItemListView), name="run-item-list"),
    path("runs/<int:run_id>/items/<int:item_id>/", api(items.ItemDetailView), name="run-item-detail"),
    path("claims/<int:claim_id>/override/", api(items.ClaimOverrideView), name="claim-override"),
    path("claims/<int:claim_id>/confirm/", api(items.ClaimConfirmView), name="claim-confirm"),
    path("claims/<int:claim_id>/undo/", api(items.ClaimUndoView), name="claim-undo"),
    path("compare/", api(compare.CompareView), name="compare"),
    path("schema/", api(SchemaView), name="schema"),
    path("docs/", api(SwaggerView, url_name="api:schema"), name="docs"),
    path("redoc/", api(RedocView, url_name="api:schema"), name="redoc"),
    re_path(r"^.*$", login_not_required(api_not_found), name="not-found"),
]
