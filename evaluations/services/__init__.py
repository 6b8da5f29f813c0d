"""Writes for evaluations, one module per job:

- `runs`: a run's life (create, start, feed, finish, aggregates, cancel, resume, re-run failed).
- `reaper`: recovery from dead workers and lost messages.
- `executor`: executing a run in this process with a pool of threads (`evaluate`, `quickstart`).
- `overrides`: reviewers' reviews (override, confirm, undo, mark reviewed) and the item and run recomputation they cause.
- `enqueue`: the one place that hands work to Celery.
- `audits`: a run's random audit sample for human-calibrated scores (start, item audited).

How a run moves through the workers:

- `runs.run_create` stores the run (queued) and, after commit, enqueues `run_start`.
- `runs.run_start` (task) marks it running, creates its RunItems and hands the broker its first
  window of item tasks: the judge's max concurrency × FEED_WINDOW_FACTOR tasks of
  ITEMS_PER_TASK items. A task executes its items one after another, then feeds the run as
  many new items as it finished (`item_process`), so a run never floods the queue: several runs
  share the workers instead of one waiting behind another's thousands of items, and a cancel
  leaves little queued.
- The last item finalises the run (`run_finalize_if_idle`: aggregates, status, finish time),
  exactly once thanks to a conditional UPDATE on the status.
- `reaper.runs_reap` (a thread in every worker, see tasks.py; or `manage.py reap_runs`) puts items
  whose lease expired back to pending, re-sends item tasks lost on the way, restarts runs whose
  start task was lost, tops up windows and finalises runs whose last finisher died.

Imports run one way: tasks → services → enqueue; `enqueue` finds the tasks by name in the Celery
app's registry, so no module of this package imports `evaluations.tasks`.
"""
