from __future__ import annotations

from evaluations.views.dashboard import dashboard_page as home

__all__ = ["home"]
