#!/usr/bin/env bash
# Gate a CI job on an evalsite run, through the REST API:
# upload the dataset, start a run (idempotently), wait for it with a timeout, exit with the gate's verdict.
#
#   EVALSITE_URL=https://evalsite.example.com EVALSITE_TOKEN=es_... scripts/ci-gate.sh \
#       --file answers.jsonl --dataset my-rag --judge offline --metrics faithfulness,rubric \
#       --fail-under faithfulness=0.8,overall=0.7 [--key "$CI_PIPELINE_ID"] [--timeout 1800] \
#       [--settings '{"repeats": 1}'] [--name "nightly"] [--target my-rag-staging] [--allow-errors]
#
# --target names a live target (id or name): each question is asked to it and its answers are scored.
# --key is the run's Idempotency-Key: a retried job with the same key follows the same run instead of
# starting another (default: the CI's pipeline/run id when one is set, else a hash of the inputs).
# Exit status (as `manage.py evaluate --fail-under`): 0 every bar passed; 1 a bar failed;
# 2 anything else (bad arguments, HTTP errors, a failed or cancelled run, items in error, the timeout).
# Needs curl and python3.
set -euo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
fail() { echo "ci-gate: $*" >&2; exit 2; }

file="" dataset="" judge="" metrics="" fail_under="" key="" timeout=1800 settings="{}" name="" target="" allow_errors=""
poll="${EVALSITE_POLL_SECONDS:-5}"
while [ $# -gt 0 ]; do
  case "$1" in
    --file) file="$2"; shift 2 ;;
    --dataset) dataset="$2"; shift 2 ;;
    --judge) judge="$2"; shift 2 ;;
    --metrics) metrics="$2"; shift 2 ;;
    --fail-under) fail_under="$2"; shift 2 ;;
    --key) key="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --settings) settings="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --allow-errors) allow_errors=1; shift ;;
    -h|--help) usage ;;
    *) echo "ci-gate: unknown argument $1" >&2; usage ;;
  esac
done
url="${EVALSITE_URL:-}"; url="${url%/}"
[ -n "$url" ] || fail "set EVALSITE_URL (e.g. https://evalsite.example.com)"
[ -n "${EVALSITE_TOKEN:-}" ] || fail "set EVALSITE_TOKEN (create one at $url/account/tokens/)"
[ -f "$file" ] || fail "--file: no such file '$file'"
for required in dataset judge metrics fail_under; do
  [ -n "${!required}" ] || fail "--${required//_/-} is required"
done
case "$timeout" in ''|*[!0-9]*) fail "--timeout: give whole seconds" ;; esac

work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
auth="Authorization: Token $EVALSITE_TOKEN"

# json FILE EXPRESSION: a value of the JSON document in FILE (`d` is the document).
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(v if not isinstance(v,(dict,list,bool)) and v is not None else json.dumps(v))' "$1" "$2"; }
# call NAME CURL_ARGS...: the HTTP status; the body in $work/NAME.json
call() { local out="$work/$1.json"; shift; curl -sS -o "$out" -w '%{http_code}' -H "$auth" "$@" || echo 000; }
api_error() { python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["error"]["message"])
except Exception: print(open(sys.argv[1], errors="replace").read()[:300])' "$work/$1.json"; }

# 1. Upload (identical content answers 200 with the existing version).
status=$(call upload -F "name=$dataset" -F "file=@$file" "$url/api/datasets/")
case "$status" in 200|201) ;; *) fail "upload failed (HTTP $status): $(api_error upload)" ;; esac
version=$(json "$work/upload.json" 'd["version"]["number"]')
echo "dataset $dataset version $version ($(json "$work/upload.json" 'd["version"]["item_count"]') items)"

# 2. Start the run with an Idempotency-Key.
if [ -z "$key" ]; then
  key="${CI_PIPELINE_ID:-${GITHUB_RUN_ID:-${BUILD_ID:-}}}"
  if [ -z "$key" ]; then
    key="ci-gate-$( (cat "$file"; echo "$dataset $judge $metrics $settings $name $target") | python3 -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:32])')"
  fi
fi
python3 - "$dataset" "$version" "$judge" "$metrics" "$settings" "$name" "$target" > "$work/run-request.json" <<'PY'
import json, sys
dataset, version, judge, metrics, settings, name, target = sys.argv[1:]
try:
    settings = json.loads(settings)
except json.JSONDecodeError as exc:
    sys.exit(f"ci-gate: --settings is not JSON: {exc}")
body = {"dataset": dataset, "version": int(version), "judge": judge,
        "metrics": [m.strip() for m in metrics.split(",") if m.strip()], "settings": settings}
if name:
    body["name"] = name
if target:
    body["target"] = target
print(json.dumps(body))
PY
status=$(call run -H "Content-Type: application/json" -H "Idempotency-Key: $key" \
  --data-binary "@$work/run-request.json" "$url/api/runs/")
case "$status" in
  201) echo "started run $(json "$work/run.json" 'd["id"]') (Idempotency-Key $key)" ;;
  200) echo "following run $(json "$work/run.json" 'd["id"]') started earlier with Idempotency-Key $key" ;;
  *) fail "starting the run failed (HTTP $status): $(api_error run)" ;;
esac
run_id=$(json "$work/run.json" 'd["id"]')
echo "run page: $(json "$work/run.json" 'd["web_url"]')"

# 3. Wait for it to finish.
deadline=$(( $(date +%s) + timeout ))
while :; do
  status=$(call poll "$url/api/runs/$run_id/")
  [ "$status" = 200 ] || fail "polling run $run_id failed (HTTP $status): $(api_error poll)"
  state=$(json "$work/poll.json" 'd["status"]')
  echo "run $run_id $state: $(json "$work/poll.json" 'd["progress"]["items_finished"]')/$(json "$work/poll.json" 'd["progress"]["items_total"]') items"
  case "$state" in completed|completed_with_errors|failed|cancelled) break ;; esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    fail "run $run_id still $state after ${timeout}s (it keeps going; re-run this job with the same --key to follow it)"
  fi
  sleep "$poll"
done

# 4. The gate: the same rules as `manage.py evaluate --fail-under`.
query="fail_under=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$fail_under")"
[ -z "$allow_errors" ] || query="$query&allow_errors=1"
status=$(call gate "$url/api/runs/$run_id/gate/?$query")
[ "$status" = 200 ] || fail "gate failed (HTTP $status): $(api_error gate)"
python3 - "$work/gate.json" <<'PY'
import json, sys
gate = json.load(open(sys.argv[1]))
for bar in gate["bars"]:
    value = "no score" if bar["value"] is None else f"{bar['value']:.3f}"
    print(f"{'PASS' if bar['passed'] else 'FAIL'} {bar['metric']} {value} (bar {bar['bar']:g})")
if gate["problem"]:
    print(f"problem: {gate['problem']}")
print(f"gate {'passed' if gate['passed'] else 'failed'}")
PY
exit "$(json "$work/gate.json" 'd["exit_code"]')"
