"""Judge agreement (`/judges/agreement/`): how often each judge config and prompt version agrees with people,
over the claims a reviewer overrode or confirmed (`evaluations.agreement.judge_agreement`).

`?judge=<id>` narrows it to one judge config; a malformed id answers 400 naming the parameter.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluations.agreement import RELIABLE_MIN_REVIEWED, judge_agreement
from evaluations.analysis_charts import confusion_html
from judges import selectors as judge_selectors

TEMPLATE = "evaluations/judge_agreement.html"


@require_GET
def judge_agreement_page(request: HttpRequest) -> HttpResponse:
    judges = judge_selectors.judge_config_list()
    raw = (request.GET.get("judge") or "").strip()
    if raw and not raw.isdigit():
        context = {"error": f"judge: {raw!r} is not a judge id (a whole number)", "judges": judges}
        return render(request, TEMPLATE, context, status=400)
    judge_id = int(raw) if raw else None
    entries = judge_agreement(judge_config_id=judge_id)
    context = {
        "judges": judges,
        "judge_id": judge_id,
        "entries": [
            (entry, confusion_html(entry.confusion, entry.labels, f"confusion-{index}"))
            for index, entry in enumerate(entries)
        ],
        "reliable_min": RELIABLE_MIN_REVIEWED,
    }
    return render(request, TEMPLATE, context)
