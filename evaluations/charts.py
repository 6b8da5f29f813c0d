"""Plotly figures of the run pages, built in Python; the page loads plotly.min.js from our static files."""

from __future__ import annotations

import hashlib

import plotly.graph_objects as go
from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe

from evaluations.run_selectors import Histogram

ACCENT = "#4f46e5"
PLOT_CONFIG = {"displayModeBar": False, "responsive": True}
HEIGHT = 170
# Built once: validating a layout costs ~7 ms, several times the rest of a figure.
_HISTOGRAM_LAYOUT = go.Layout(
    height=HEIGHT,
    margin={"l": 40, "r": 12, "t": 8, "b": 30},
    bargap=0,
    plot_bgcolor="#ffffff",
    paper_bgcolor="#ffffff",
    font={"size": 11, "color": "#667085"},
    xaxis={"showgrid": False, "zeroline": False, "ticklabelstandoff": 4, "linecolor": "#d0d5dd"},
    yaxis={"gridcolor": "#eaecf0", "zeroline": False, "rangemode": "tozero", "nticks": 4, "ticklabelstandoff": 6},
)


def histogram_html(histogram: Histogram) -> SafeString:
    """A bar chart of the histogram's bins. Only numbers reach the figure (no dataset text), so its
    hover labels cannot carry markup."""
    bars = go.Bar(
        x=histogram.centers,
        y=histogram.counts,
        width=histogram.width * 0.92,
        marker_color=ACCENT,
        hovertemplate="score %{x:.2f}: %{y} items<extra></extra>",
    )
    figure = go.Figure(data=[bars], layout=_HISTOGRAM_LAYOUT)
    figure.layout.xaxis.range = [histogram.low, histogram.high]
    html = figure.to_html(include_plotlyjs=False, full_html=False, config=PLOT_CONFIG, default_height=f"{HEIGHT}px")
    return mark_safe(html)  # Plotly's own markup around our numbers


# A finished run's charts change only when its aggregates do (an override): cache the HTML by content.
CHART_CACHE_SECONDS = 3600


def histograms_html(run_id: int, histograms: list[Histogram]) -> list[tuple[str, SafeString]]:
    """(name, chart HTML) per histogram, from the cache when the same counts were drawn before."""
    digest = hashlib.blake2b(repr([(h.name, h.low, h.high, h.counts) for h in histograms]).encode()).hexdigest()
    key = f"run-histograms:{run_id}:{digest}"
    charts = cache.get(key)
    if charts is None:
        charts = [(histogram.name, str(histogram_html(histogram))) for histogram in histograms]
        cache.set(key, charts, CHART_CACHE_SECONDS)
    return [(name, mark_safe(html)) for name, html in charts]  # our own figures (see histogram_html)
