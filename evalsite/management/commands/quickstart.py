from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from datasets.services import dataset_import
from evalsite.services import user_create_or_update
from evaluations.models import Run, RunStatus
from evaluations.services.executor import run_execute_in_process
from evaluations.services.runs import run_create
from judges.services import judge_default_offline

DEMO_DATASET = Path(__file__).resolve().parents[3] / "datasets" / "demo" / "stip-governance.jsonl"
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "evalsite-demo"  # noqa: S105 - the published demo login of the embedded mode
DEMO_METRICS = ["faithfulness", "relevancy", "rubric", "correctness", "citation_audit", "retrieval"]


class Command(BaseCommand):
    help = "Demo data for the embedded mode: a demo admin, the demo dataset, the offline judge and a finished run."

    def handle(self, *args, **options):
        user, _ = user_create_or_update(username=DEMO_USERNAME, password=DEMO_PASSWORD, role="admin")
        with DEMO_DATASET.open("rb") as handle:
            result = dataset_import(name="stip-governance", file=handle, filename=DEMO_DATASET.name, user=user)
        judge = judge_default_offline()
        self.stdout.write(f"Demo dataset {result.version} ({result.version.item_count} items), judge {judge.name!r}")
        self._demo_run(result.version, judge, user)

    def _demo_run(self, version, judge, user) -> None:
        if Run.objects.filter(dataset_version=version, judge_config=judge, status=RunStatus.COMPLETED).exists():
            self.stdout.write("Demo run already finished")
            return
        run = run_create(
            dataset_version=version, judge_config=judge, metrics=DEMO_METRICS, name="Demo run", user=user, enqueue=False
        )
        run = run_execute_in_process(run=run)
        self.stdout.write(f"Demo run {run.pk}: {run.status}, {run.items_done} items scored")
