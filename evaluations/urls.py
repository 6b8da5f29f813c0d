from __future__ import annotations

from django.urls import path

from evaluations.views import audits, compare, review, runs

app_name = "evaluations"

# Run pages (evaluations/views/runs.py).
urlpatterns = [
    path("", runs.run_list, name="run_list"),
    path("new/", runs.run_new, name="run_new"),
    path("<int:run_id>/", runs.run_detail, name="run_detail"),
    path("<int:run_id>/cancel/", runs.run_cancel, name="run_cancel"),
    path("<int:run_id>/resume/", runs.run_resume, name="run_resume"),
    path("<int:run_id>/rerun-failed/", runs.run_rerun_failed, name="run_rerun_failed"),
    path("<int:run_id>/export.csv", runs.run_export, {"fmt": "csv"}, name="run_export_csv"),
    path("<int:run_id>/export.json", runs.run_export, {"fmt": "json"}, name="run_export_json"),
]

# Item review pages (evaluations/views/review.py).
urlpatterns += [
    path("<int:run_id>/items/<int:item_id>/", review.item_review, name="item_review"),
    path("<int:run_id>/items/<int:item_id>/claims/<int:claim_id>/review/", review.claim_review, name="claim_review"),
    path("<int:run_id>/items/<int:item_id>/reviewed/", review.item_mark_reviewed, name="item_mark_reviewed"),
    path("<int:run_id>/review/", review.review_queue, name="review_queue"),
    path("<int:run_id>/review/next/", review.review_next, name="review_next"),
]

# Audit pages (evaluations/views/audits.py).
urlpatterns += [
    path("<int:run_id>/audit/", audits.audit_queue, name="audit_queue"),
    path("<int:run_id>/audit/start/", audits.audit_start, name="audit_start"),
    path("<int:run_id>/audit/next/", audits.audit_next, name="audit_next"),
]

# Run comparison pages (evaluations/views/compare.py).
urlpatterns += [
    path("compare/", compare.compare_runs, name="compare"),
    path("compare/item/", compare.compare_item_view, name="compare_item"),
]
