"""Retrieval: did the retriever bring back the contexts the item expects, and how high? (deterministic, 0 judge calls)

Steps:
1. Without expected context ids the metric is skipped (reason "no expected context ids").
2. Ranked list = the item's `retrieved_ids` when given, else its contexts' order; a repeated
   id counts once, at its first rank. k = run setting `retrieval_k` (None: every retrieved
   context); the top k are evaluated.
3. `retrieval_scores` (binary relevance: a context is relevant when its id is expected):
   - hit: any expected id in the top k (LlamaIndex hit rate, non-granular);
   - reciprocal_rank: 1 / rank of the first relevant context in the top k, 0 if none
     (LlamaIndex MRR, non-granular);
   - precision@k: relevant contexts in the top k / contexts in the top k;
   - recall@k: expected ids found in the top k / expected ids;
   - ndcg@k: DCG = Σ rel_i / log2(i + 1) over ranks i = 1..k; ideal DCG puts
     min(expected, k) relevant contexts first.

Score: the reciprocal rank, 0..1, higher is better (1.0 = an expected context ranked first,
0.5 = second, 0.0 = none in the top k); a run's mean score is its MRR, which sees a relevant
context dropping from rank 1 to 3 where hit rate does not (hit rate is the mean of
details.hit). Default threshold 0.1 (run setting `thresholds.retrieval`: an expected context
within the top 10); passed = score ≥ threshold, the rule of every metric (`base.passes`), so
a miss fails at any threshold above 0 and threshold 0 passes everything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome, scored_outcome

NO_EXPECTED_IDS = "no expected context ids"


def retrieval_scores(expected_ids: Sequence[str], retrieved_ids: Sequence[str], k: int | None = None) -> dict[str, Any]:
    """hit, reciprocal_rank, precision, recall, ndcg (at k) and k itself, for binary relevance."""
    expected = set(expected_ids)
    if not expected:
        raise ValueError("no expected ids")
    ranked = list(dict.fromkeys(retrieved_ids))
    top = ranked if k is None else ranked[:k]
    relevant = [doc_id in expected for doc_id in top]
    found = sum(relevant)
    first = relevant.index(True) + 1 if found else None
    dcg = sum(1.0 / math.log2(rank + 1) for rank, is_relevant in enumerate(relevant, start=1) if is_relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(expected), len(top)) + 1))
    return {
        "k": len(top) if k is None else k,
        "hit": found > 0,
        "reciprocal_rank": 1.0 / first if first else 0.0,
        "precision": found / len(top) if top else 0.0,
        "recall": found / len(expected),
        "ndcg": dcg / ideal if ideal else 0.0,
    }


class RetrievalMetric:
    name = "retrieval"
    uses_judge = False

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome:
        threshold = ctx.settings["thresholds"]["retrieval"]
        if not item.expected_context_ids:
            return MetricOutcome(metric=self.name, threshold=threshold, skipped_reason=NO_EXPECTED_IDS)
        retrieved = item.retrieved_ids if item.retrieved_ids is not None else [context.id for context in item.contexts]
        scores = retrieval_scores(item.expected_context_ids, retrieved, ctx.settings["retrieval_k"])
        return scored_outcome(
            self.name,
            scores["reciprocal_rank"],
            threshold,
            feedback=_feedback(scores),
            details=scores | {"expected_ids": list(item.expected_context_ids), "retrieved_ids": list(retrieved)},
        )


def _feedback(scores: dict[str, Any]) -> str:
    if not scores["hit"]:
        return f"No expected context in the top {scores['k']}."
    return f"First expected context at rank {round(1 / scores['reciprocal_rank'])} of the top {scores['k']}."


RETRIEVAL = RetrievalMetric()
