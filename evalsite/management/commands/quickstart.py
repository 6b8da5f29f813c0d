from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from datasets.services import dataset_import
from evalsite.services import user_create_or_update
from evaluations.models import Run, RunStatus
from evaluations.services.executor import run_execute_in_process
from evaluations.services.runs import run_create
from judges.services import judge_default_offline
from targets.check import target_check
from targets.services import target_demo_ensure

DEMO_DATASET = Path(__file__).resolve().parents[3] / "datasets" / "demo" / "stip-governance.jsonl"
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "evalsite-demo"  # noqa: S105 - the published demo login of the embedded mode
DEMO_METRICS = ["faithfulness", "relevancy", "rubric", "correctness", "citation_audit", "retrieval"]
DEMO_RAG_URL = "http://127.0.0.1:8100/query"  # python -m evalsite.demo_rag, started by scripts/run.sh


class Command(BaseCommand):
    help = (
        "Demo data for the embedded mode: a demo admin, the demo dataset, the offline judge and a finished run; "
        "the demo live target, and a finished run against it when python -m evalsite.demo_rag answers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--demo-rag-url", default=DEMO_RAG_URL, help="where python -m evalsite.demo_rag listens")

    def handle(self, *args, **options):
        user, _ = user_create_or_update(username=DEMO_USERNAME, password=DEMO_PASSWORD, role="admin")
        with DEMO_DATASET.open("rb") as handle:
            result = dataset_import(name="stip-governance", file=handle, filename=DEMO_DATASET.name, user=user)
        judge = judge_default_offline()
        self.stdout.write(f"Demo dataset {result.version} ({result.version.item_count} items), judge {judge.name!r}")
        self._demo_run(result.version, judge, user)
        self._demo_target_run(result.version, judge, user, options["demo_rag_url"])

    def _demo_run(self, version, judge, user) -> None:
        if Run.objects.filter(dataset_version=version, judge_config=judge, status=RunStatus.COMPLETED).exists():
            self.stdout.write("Demo run already finished")
            return
        run = run_create(
            dataset_version=version, judge_config=judge, metrics=DEMO_METRICS, name="Demo run", user=user, enqueue=False
        )
        run = run_execute_in_process(run=run)
        self.stdout.write(f"Demo run {run.pk}: {run.status}, {run.items_done} items scored")

    def _demo_target_run(self, version, judge, user, url: str) -> None:
        target = target_demo_ensure(url=url)
        if Run.objects.filter(dataset_version=version, target=target, status=RunStatus.COMPLETED).exists():
            self.stdout.write(f"Demo target {target.name!r} ({url}); its demo run already finished")
            return
        report = target_check(target)
        if not report.ok:
            self.stdout.write(f"Demo target {target.name!r} registered; no run against it yet: {report.message}")
            return
        run = run_create(
            dataset_version=version,
            judge_config=judge,
            metrics=DEMO_METRICS,
            name="Demo run (live target)",
            user=user,
            enqueue=False,
            target=target,
        )
        run = run_execute_in_process(run=run)
        self.stdout.write(f"Demo run {run.pk} against target {target.name!r}: {run.status}, {run.items_done} items")
