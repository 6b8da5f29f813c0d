#!/usr/bin/env bash
# The embedded default: SQLite, the filesystem broker, the offline judge, a demo dataset and a finished demo run.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBUG="${DEBUG:-1}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
PY=.venv/bin/python

DEMO_RAG_PORT="${DEMO_RAG_PORT:-8100}"

mkdir -p var
# The demo live target: a small RAG stand-in over the demo dataset's contexts (python -m evalsite.demo_rag).
$PY -m evalsite.demo_rag --port "$DEMO_RAG_PORT" --latency-ms 40 >var/demo_rag.log 2>&1 &
DEMO_RAG=$!
trap 'kill $DEMO_RAG 2>/dev/null || true' EXIT INT TERM

$PY manage.py migrate --noinput
$PY manage.py quickstart --demo-rag-url "http://127.0.0.1:$DEMO_RAG_PORT/query"

$PY -m celery -A evalsite worker --pool threads --concurrency 4 --loglevel WARNING >var/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER $DEMO_RAG 2>/dev/null || true' EXIT INT TERM

echo
echo "evalsite is running at http://$HOST:$PORT/  (worker log: var/worker.log; Ctrl-C stops all three)"
echo "Demo live target (python -m evalsite.demo_rag): http://127.0.0.1:$DEMO_RAG_PORT/query, registered as 'demo-rag'"
echo "Log in as: demo / evalsite-demo"
echo
$PY manage.py runserver "$HOST:$PORT" --noreload
