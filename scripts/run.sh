#!/usr/bin/env bash
# The embedded default: SQLite, the filesystem broker, the offline judge, a demo dataset and a finished demo run.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBUG="${DEBUG:-1}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
PY=.venv/bin/python

$PY manage.py migrate --noinput
$PY manage.py quickstart

$PY -m celery -A evalsite worker --pool threads --concurrency 4 --loglevel WARNING >var/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null || true' EXIT INT TERM

echo
echo "evalsite is running at http://$HOST:$PORT/  (worker log: var/worker.log; Ctrl-C stops both)"
echo "Log in as: demo / evalsite-demo"
echo
$PY manage.py runserver "$HOST:$PORT" --noreload
