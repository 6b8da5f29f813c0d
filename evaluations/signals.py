"""Signals other apps listen to (the run engine never imports them).

`run_finished` is sent once, by the call that moved a run to a finished status
(`services.runs.run_finalize_if_idle`, or `run_cancel` for a run that never started), with
`run_id` and `status`. Receivers run inside that call: keep them to a cheap lookup and hand
real work to a task after commit.
"""

from __future__ import annotations

from django.dispatch import Signal

run_finished = Signal()
