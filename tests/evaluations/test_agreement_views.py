"""/judges/agreement/: per judge and prompt version, κ with intervals ("κ undefined" as such), the reliability
note, the heatmap, the most-overridden claims linking to their items; linked from the judges page."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from evaluations.models import Claim
from evaluations.services.overrides import claim_confirm, claim_override
from tests.evaluations.scored_runs import scored_run

# The analyst pages serve the embedded path too (make run): they also run in the SQLite pass.
pytestmark = [pytest.mark.sqlite]

S, P, C, N = "SUPPORTED", "PARTIALLY_SUPPORTED", "CONTRADICTED", "NOT_ENOUGH_INFO"
URL = "/judges/agreement/"


@pytest.fixture
def viewer(make_user) -> Client:
    client = Client()
    client.force_login(make_user("vera", role="viewer"))
    return client


@pytest.fixture
def reviewer(make_user):
    return make_user("rita", role="reviewer")


def run_with_claims(version, judge, verdicts: list[str], prompt: str = "claim_verification@1"):
    claims = [(f"Claim {n} about the river.", verdict, verdict) for n, verdict in enumerate(verdicts, start=1)]
    run = scored_run(
        version, judge, {"q-1": {"faithfulness": 1.0, "claims": claims}}, prompt_versions={"faithfulness": prompt}
    )
    return run, list(Claim.objects.filter(item__run=run).order_by("position"))


def page_text(response) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split()))


def test_the_page_shows_kappa_with_intervals_the_heatmap_and_the_most_overridden_claims(
    viewer, reviewer, make_dataset, offline_judge
) -> None:
    version = make_dataset(2, name="river")
    run, claims = run_with_claims(version, offline_judge, [S, S, S, C])
    claim_confirm(claim=claims[0], reviewer=reviewer)
    claim_override(claim=claims[1], reviewer=reviewer, new_verdict=C, reason="c1 says the opposite")
    claim_confirm(claim=claims[2], reviewer=reviewer)
    claim_confirm(claim=claims[3], reviewer=reviewer)

    response = viewer.get(URL)

    assert response.status_code == 200
    text = page_text(response)
    assert "offline-test" in text and "prompt claim_verification@1" in text
    assert re.search(r"Reviewed claims 4 ", text) and "Override rate 25.0%" in text
    # judge S S S C vs person S C S C: κ = 1/2
    assert re.search(r"Cohen's κ ?, four verdicts 0\.50 95% CI \[\d\.\d\d, \d\.\d\d\]", text), text
    assert "Only 4 claims reviewed: fewer than 30" in text
    page = response.content.decode()
    assert re.search(r'Plotly\.newPlot\(\s*"confusion-0"', page) and "vendor/plotly.min.js" in page
    link = f'href="/runs/{run.pk}/items/{claims[1].item_id}/#claim-{claims[1].pk}"'
    assert link in page and "Claim 2 about the river." in page


def test_kappa_undefined_is_shown_as_such(viewer, reviewer, make_dataset, offline_judge) -> None:
    version = make_dataset(2, name="river")
    _, claims = run_with_claims(version, offline_judge, [S, S])
    for claim in claims:
        claim_confirm(claim=claim, reviewer=reviewer)

    text = page_text(viewer.get(URL))

    assert text.count("κ undefined") == 2  # four verdicts and supported vs not: one label on both sides
    assert "Every reviewed claim was confirmed" in text


def test_judges_and_prompt_versions_get_their_own_entry_and_the_filter_narrows(
    viewer, reviewer, make_dataset, offline_judge
) -> None:
    from judges.services import judge_config_create

    version = make_dataset(2, name="river")
    other = judge_config_create(name="zeta", provider="offline", model="heuristic-v1")
    for judge, prompt in (
        (offline_judge, "claim_verification@1"),
        (offline_judge, "claim_verification@2"),
        (other, "claim_verification@1"),
    ):
        _, claims = run_with_claims(version, judge, [S, C], prompt=prompt)
        claim_override(claim=claims[0], reviewer=reviewer, new_verdict=N, reason="no context says it")

    everything = viewer.get(URL).content.decode()
    only_zeta = viewer.get(URL, {"judge": other.pk}).content.decode()

    assert re.findall(r'data-judge="([^"]+)" data-prompt="([^"]+)"', everything) == [
        ("offline-test", "claim_verification@1"),
        ("offline-test", "claim_verification@2"),
        ("zeta", "claim_verification@1"),
    ]
    assert re.findall(r'data-judge="([^"]+)"', only_zeta) == ["zeta"]


def test_no_review_yet_gets_an_empty_state(viewer, db) -> None:
    response = viewer.get(URL)

    assert response.status_code == 200 and "No reviewed claims yet" in page_text(response)


def test_a_malformed_judge_id_is_refused_naming_the_parameter(viewer, db) -> None:
    response = viewer.get(URL, {"judge": "gpt"})

    assert response.status_code == 400 and "judge: 'gpt' is not a judge id" in page_text(response)


def test_the_judges_page_links_to_it_and_anonymous_visitors_log_in_first(viewer, client, db) -> None:
    assert 'href="/judges/agreement/"' in viewer.get("/judges/").content.decode()

    response = client.get(URL)

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_agreement_page_query_count_is_fixed(
    viewer, reviewer, make_dataset, offline_judge, django_assert_num_queries
) -> None:
    version = make_dataset(2, name="river")
    for prompt in ("claim_verification@1", "claim_verification@2"):
        _, claims = run_with_claims(version, offline_judge, [S, C, P], prompt=prompt)
        for claim in claims:
            claim_override(claim=claim, reviewer=reviewer, new_verdict=N, reason="not in the contexts")
    # session, user, the judges for the filter, judge_agreement's one query
    with django_assert_num_queries(4):
        assert viewer.get(URL).status_code == 200
