"""The dashboard (`/`): recent runs and their review backlog, live progress polling, trends, spend, comparisons."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from evaluations import dashboard
from evaluations.models import Run, RunItem, RunStatus
from evaluations.services.runs import run_aggregates_refresh
from judges.models import JudgeCall
from judges.services import judge_config_create
from tests.evaluations.scored_runs import ERROR, scored_run

# The analyst pages serve the embedded path too (make run): they also run in the SQLite pass.
pytestmark = [pytest.mark.sqlite]


@pytest.fixture
def viewer(make_user) -> Client:
    client = Client()
    client.force_login(make_user("vera", role="viewer"))
    return client


def finished(run: Run, started_minutes_ago: int) -> Run:
    """The run's aggregates as a finished run has them, started `started_minutes_ago` minutes ago."""
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(minutes=started_minutes_ago))
    run.refresh_from_db()
    run_aggregates_refresh(run=run)
    run.refresh_from_db()
    return run


@pytest.fixture
def history(make_dataset, offline_judge):
    """Dataset river: three finished runs (faithfulness 0.9, 0.8, 0.7; the last with 3 repeats), one running."""
    version = make_dataset(4, name="river")
    runs = []
    for position, score in enumerate((0.9, 0.8, 0.7)):
        items = {f"q-{n}": {"faithfulness": score, "relevancy": 1.0} for n in range(1, 4)}
        items["q-4"] = ERROR
        settings = {"repeats": 3} if position == 2 else None
        runs.append(finished(scored_run(version, offline_judge, items, name=f"night-{position + 1}", settings=settings),
                             30 - position))  # fmt: skip
    # scored_run writes no per-item samples: the spread across repeats as the engine's aggregates would have it
    aggregates = runs[2].aggregates
    aggregates["metrics"]["faithfulness"]["std_mean"] = 0.04
    Run.objects.filter(pk=runs[2].pk).update(aggregates=aggregates)
    running = scored_run(version, offline_judge, {"q-1": {"faithfulness": 1.0}}, name="live")
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING, items_total=4, items_done=1)
    return runs, running


def test_the_dashboard_lists_recent_runs_with_progress_and_items_awaiting_review(viewer, history) -> None:
    (first, second, third), running = history
    RunItem.objects.filter(run=third).filter(example__external_id="q-1").update(reviewed_at=timezone.now())

    response = viewer.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    rows = dict(re.findall(r'<tr data-run="(\d+)">(.*?)</tr>', page, re.S))
    assert list(rows) == [str(running.pk), str(third.pk), str(second.pk), str(first.pk)]  # newest first
    assert f'href="/runs/{third.pk}/review/"' in rows[str(third.pk)] and "3 to review" in rows[str(third.pk)]
    assert "4 to review" in rows[str(first.pk)]  # 3 scored + 1 errored item, none reviewed
    assert 'data-status="running"' in rows[str(running.pk)] and "--value: 25%" in rows[str(running.pk)]
    assert 'hx-trigger="every 2s"' in page  # a run is in progress: the list polls


def test_the_runs_fragment_polls_while_a_run_is_active_and_stops_with_286(viewer, history) -> None:
    _, running = history
    fragment = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "recent-runs"}

    live = viewer.get("/", **fragment)
    Run.objects.filter(pk=running.pk).update(status=RunStatus.COMPLETED, items_done=4)
    done = viewer.get("/", **fragment)

    assert live.status_code == 200 and 'hx-trigger="every 2s"' in live.content.decode()
    assert "<html" not in live.content.decode()
    assert done.status_code == 286 and "hx-trigger" not in done.content.decode()


def test_each_dataset_has_a_trend_of_its_metrics_with_run_details_and_repeat_error_bars(history) -> None:
    (first, second, third), _ = history

    [trend] = dashboard.dataset_trends()

    assert trend.dataset == "river" and trend.runs == 3
    series = {entry.metric: entry for entry in trend.series}
    assert sorted(series) == ["faithfulness", "relevancy"]
    assert series["faithfulness"].means == [0.9, 0.8, 0.7]  # oldest first
    assert series["faithfulness"].started == [first.started_at, second.started_at, third.started_at]
    assert series["faithfulness"].errors == [None, None, 0.04]
    hover = series["faithfulness"].hovers[2]
    assert f"#{third.pk} night-3" in hover and "judge offline-test" in hover and "model heuristic-v1" in hover
    assert "faithfulness 1" in hover and "dataset v1" in hover and "3 repeats" in hover
    assert trend.latest_pair == (second.pk, third.pk)


def test_the_page_draws_the_trend_and_links_the_latest_comparison(viewer, history) -> None:
    (_, second, third), _ = history

    page = viewer.get("/").content.decode()

    assert 'id="trend-river"' not in page and re.search(r'id="trend-\d+"', page)
    assert f'href="/runs/compare/?base={second.pk}&amp;candidate={third.pk}"' in page
    figure = re.search(r'Plotly\.newPlot\(\s*"trend-\d+",\s*(\[.*?\]),\s*\{', page, re.S).group(1)
    traces = json.loads(figure)
    faithfulness = next(trace for trace in traces if trace["name"] == "faithfulness")
    assert sorted(trace["name"] for trace in traces) == ["faithfulness", "relevancy"]
    assert faithfulness["y"] == [0.9, 0.8, 0.7] and "night-3" in faithfulness["text"][2]
    assert "cdn.plot.ly" not in page


def test_judge_spend_covers_the_last_30_days_per_judge(viewer, offline_judge) -> None:
    paid = judge_config_create(name="gpt", provider="openai", model="gpt-4.1-mini", api_key_env="OPENAI_API_KEY")
    calls = [
        JudgeCall(config=paid, cache_key="a", prompt_name="rubric", prompt_version="1", request={},
                  input_tokens=1000, output_tokens=200, cost=Decimal("0.0012")),
        JudgeCall(config=paid, cache_key="b", prompt_name="rubric", prompt_version="1", request={},
                  input_tokens=500, output_tokens=100, cost=Decimal("0.0006"), error="HTTP 500"),
        JudgeCall(config=paid, cache_key="c", prompt_name="rubric", prompt_version="1", request={},
                  input_tokens=9000, output_tokens=9000, cost=Decimal("9")),
        JudgeCall(config=offline_judge, cache_key="d", prompt_name="rubric", prompt_version="1", request={},
                  input_tokens=10, output_tokens=5),
    ]  # fmt: skip
    JudgeCall.objects.bulk_create(calls)
    JudgeCall.objects.filter(cache_key="c").update(created_at=timezone.now() - timedelta(days=31))

    spend = dashboard.judge_spend()

    assert [
        (entry.judge, entry.calls, entry.input_tokens, entry.output_tokens, entry.errors) for entry in spend.judges
    ] == [
        ("gpt", 2, 1500, 300, 1),
        ("offline-test", 1, 10, 5, 0),
    ]
    assert spend.judges[0].cost == Decimal("0.0018") and spend.total_tokens == 1815
    page = html.unescape(viewer.get("/").content.decode()) if RunItem.objects.exists() else None
    assert page is None  # no run: the dashboard shows its getting-started state instead


def test_a_fresh_install_gets_a_getting_started_state(viewer, db) -> None:
    response = viewer.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="getting-started"' in page and "Import a dataset" in page and 'href="/datasets/upload/"' in page
    assert "vendor/plotly.min.js" not in page and "hx-trigger" not in page


def test_anonymous_visitors_are_sent_to_the_login(client, db) -> None:
    response = client.get("/")

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_dashboard_query_count_is_fixed(
    viewer, history, make_dataset, offline_judge, django_assert_num_queries
) -> None:
    lake = make_dataset(3, name="lake")
    for minutes in (20, 10):
        finished(scored_run(lake, offline_judge, {"q-1": {"faithfulness": 0.5}}), minutes)
    # session, user, recent runs, their review backlog, trend runs, their prompt versions, spend, the user's roles
    with django_assert_num_queries(8):
        response = viewer.get("/")
    assert response.status_code == 200 and response.content.decode().count('class="card dash-trend"') == 2
    with django_assert_num_queries(4):  # the polled fragment: session, user, runs, backlog
        viewer.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="recent-runs")


def test_a_metric_on_another_scale_gets_the_right_axis_of_the_trend() -> None:
    import json
    from datetime import datetime

    from evaluations.analysis_charts import TrendSeries, trend_html

    moments = [datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)]
    series = [
        TrendSeries("faithfulness", moments, [0.7, 0.8], [None, None], ["a", "b"]),
        TrendSeries("correctness", moments, [3.5, 4.0], [None, None], ["a", "b"]),
    ]

    page = str(trend_html(series, "trend-1"))

    traces = json.loads(re.search(r'Plotly\.newPlot\(\s*"trend-1",\s*(\[.*?\]),\s*\{', page, re.S).group(1))
    assert [trace["yaxis"] for trace in traces] == ["y", "y2"]
    assert '"side":"right"' in page.replace(" ", "") and "correctness (1\\u20135)" in page
