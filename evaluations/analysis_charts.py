"""Plotly figures of the analyst's pages (dashboard trends, comparison scatter, agreement heatmap).

Built in Python with plotly.graph_objects and rendered with include_plotlyjs=False: the pages load
plotly.min.js from our own static files. Dataset text that reaches a hover label (a question, a
run name) is HTML-escaped first: Plotly renders a few tags in labels.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from django.utils.safestring import SafeString, mark_safe

from evaluations.aggregates import SCORE_SCALES
from evaluations.charts import ACCENT, PLOT_CONFIG
from evaluations.models import shorten

PASS, FAIL, NEUTRAL, GRID, AXIS, MUTED = "#067647", "#b42318", "#98a2b3", "#eaecf0", "#d0d5dd", "#667085"
# One colour per metric line, in the order the metrics come.
SERIES_COLOURS = ["#4f46e5", "#0e9384", "#dc6803", "#c11574", "#175cd3", "#667085", "#6938ef"]
HOVER_TEXT_CHARS = 120
# SVG up to this many points (works without WebGL, sharp in screenshots); WebGL above, where SVG gets slow.
WEBGL_FROM_POINTS = 3000
_FONT = {"size": 11, "color": MUTED}


def _html(figure: go.Figure, height: int, div_id: str | None = None) -> SafeString:
    html_text = figure.to_html(
        include_plotlyjs=False,
        full_html=False,
        config=PLOT_CONFIG,
        default_height=f"{height}px",
        div_id=div_id,
    )
    return mark_safe(html_text)  # Plotly's own markup; every text we put in is escaped


def _dict_html(figure: dict, height: int, div_id: str) -> SafeString:
    """A figure given as plain dicts, rendered without validation (we build every value ourselves)."""
    html_text = pio.to_html(
        figure,
        include_plotlyjs=False,
        full_html=False,
        config=PLOT_CONFIG,
        default_height=f"{height}px",
        div_id=div_id,
        validate=False,
    )
    return mark_safe(html_text)  # Plotly's own markup; every text we put in is escaped


def hover_text(text: str, limit: int = HOVER_TEXT_CHARS) -> str:
    return html.escape(shorten(text, limit))


# --- Dashboard: each metric's mean over a dataset's runs ---------------------------------------


@dataclass(frozen=True)
class TrendSeries:
    metric: str
    started: list[datetime]
    means: list[float | None]
    errors: list[float | None]  # std across repeats (None: the run had no repeats)
    hovers: list[str]  # run name, judge, model, prompt versions, dataset version (escaped)


def trend_html(series: Sequence[TrendSeries], div_id: str) -> SafeString:
    """A line per metric over the runs; plain dicts without Plotly's validation (~15 ms a figure saved:
    the dashboard draws one per dataset). Scores in 0..1 share the left axis; a metric on another scale
    (correctness, 1..5) gets the right axis, so it neither squashes the others nor reads as a ratio."""
    traces = []
    other_scales = {entry.metric: SCORE_SCALES[entry.metric] for entry in series if entry.metric in SCORE_SCALES}
    for index, entry in enumerate(series):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        has_errors = any(value is not None for value in entry.errors)
        traces.append(
            {
                "type": "scatter",
                "x": [moment.isoformat() for moment in entry.started],
                "y": entry.means,
                "name": entry.metric.replace("_", " "),
                "mode": "lines+markers",
                "line": {"color": colour, "width": 2},
                "marker": {"size": 7},
                "error_y": {
                    "type": "data",
                    "array": [value or 0 for value in entry.errors],
                    "visible": has_errors,
                    "thickness": 1.2,
                    "width": 4,
                    "color": colour,
                },
                "text": entry.hovers,
                "hovertemplate": "<b>%{fullData.name}: %{y:.3f}</b><br>%{text}<extra></extra>",
                "yaxis": "y2" if entry.metric in other_scales else "y",
            }
        )
    layout = {
        "height": 260,
        "margin": {"l": 56, "r": 12, "t": 8, "b": 36},
        "plot_bgcolor": "#ffffff",
        "paper_bgcolor": "#ffffff",
        "font": _FONT,
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.22, "x": 0},
        "xaxis": {"type": "date", "showgrid": False, "linecolor": AXIS},
        "yaxis": {"gridcolor": GRID, "zeroline": False, "range": [-0.03, 1.03], "title": {"text": "score (0–1)"}},
    }
    if other_scales:
        low = min(scale[0] for scale in other_scales.values())
        high = max(scale[1] for scale in other_scales.values())
        names = ", ".join(name.replace("_", " ") for name in other_scales)
        pad = (high - low) * 0.03
        layout["yaxis2"] = {
            "overlaying": "y",
            "side": "right",
            "range": [low - pad, high + pad],
            "showgrid": False,
            "zeroline": False,
            "title": {"text": f"{names} ({low:g}–{high:g})"},
        }
        layout["margin"]["r"] = 56
    return _dict_html({"data": traces, "layout": layout}, 260, div_id)


# --- Comparison: base vs candidate per item -----------------------------------------------------


def scatter_html(
    *,
    base: np.ndarray,
    candidate: np.ndarray,
    questions: Sequence[str],
    external_ids: Sequence[str],
    scale: tuple[float, float],
    metric: str,
) -> SafeString:
    """One point per paired example, a trace per direction of change (regressed, improved, unchanged), with
    the diagonal (no change).

    Points carry the example's external id in customdata: static/js/compare.js opens its diff on click.
    WebGL (scattergl) keeps 10,000 points responsive; smaller comparisons are SVG. The traces are plain dicts rendered without
    Plotly's per-element validation: validating 10,000 points cost 0.8 s (bench/ui.py), and every
    value here is a number or an escaped string we built.
    """
    delta = candidate - base
    ids = np.asarray(external_ids, dtype=object)
    texts = np.asarray([hover_text(question) for question in questions], dtype=object)
    traces: list[dict] = [
        {
            "type": "scatter",
            "x": [scale[0], scale[1]],
            "y": [scale[0], scale[1]],
            "mode": "lines",
            "line": {"color": AXIS, "dash": "dash", "width": 1.5},
            "hoverinfo": "skip",
            "showlegend": False,
        }
    ]
    for name, colour, mask in (
        ("regressed", FAIL, delta < 0),
        ("improved", PASS, delta > 0),
        ("unchanged", NEUTRAL, delta == 0),
    ):
        count = int(np.count_nonzero(mask))
        traces.append(
            {
                "type": "scattergl" if len(base) > WEBGL_FROM_POINTS else "scatter",
                "name": f"{name} ({count:,})",
                "x": base[mask].tolist(),
                "y": candidate[mask].tolist(),
                "mode": "markers",
                "marker": {"color": colour, "size": 7, "opacity": 0.65},
                "text": texts[mask].tolist(),
                "customdata": ids[mask].tolist(),
                "hovertemplate": "<b>%{customdata}</b><br>%{text}<br>base %{x:.3f} → candidate %{y:.3f}<extra></extra>",
            }
        )
    label = metric.replace("_", " ")
    layout = _scatter_layout(scale)
    layout["xaxis"]["title"] = {"text": f"base {label}"}
    layout["yaxis"]["title"] = {"text": f"candidate {label}"}
    return _dict_html({"data": traces, "layout": layout}, 440, "compare-scatter")


def _scatter_layout(scale: tuple[float, float]) -> dict:
    low, high = scale
    pad = (high - low) * 0.03
    axis = {"range": [low - pad, high + pad], "gridcolor": GRID, "zeroline": False, "linecolor": AXIS}
    return {
        "height": 440,
        "margin": {"l": 52, "r": 16, "t": 8, "b": 44},
        "plot_bgcolor": "#ffffff",
        "paper_bgcolor": "#ffffff",
        "font": _FONT,
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        "xaxis": dict(axis),
        "yaxis": dict(axis),
    }


# --- Agreement: the judge's verdict vs the person's -------------------------------------------


def confusion_html(confusion: Sequence[Sequence[int]], labels: Sequence[str], div_id: str) -> SafeString:
    """Rows: the judge's verdict; columns: the person's final verdict; each cell shows its count."""
    words = [label.replace("_", " ").lower() for label in labels]
    counts = np.array(confusion, dtype=float)
    figure = go.Figure(
        data=[
            go.Heatmap(
                z=counts,
                x=words,
                y=words,
                colorscale=[[0, "#f5f6ff"], [1, ACCENT]],
                showscale=False,
                text=[[str(int(value)) for value in row] for row in counts],
                texttemplate="%{text}",
                textfont={"size": 13},
                hovertemplate="judge: %{y}<br>person: %{x}<br>%{z} claims<extra></extra>",
                xgap=2,
                ygap=2,
            )
        ],
        layout=go.Layout(
            height=300,
            margin={"l": 130, "r": 12, "t": 8, "b": 70},
            plot_bgcolor="#ffffff",
            paper_bgcolor="#ffffff",
            font=_FONT,
            xaxis={"title": {"text": "person's verdict"}, "side": "bottom"},
            yaxis={"title": {"text": "judge's verdict"}, "autorange": "reversed"},
        ),
    )
    return _html(figure, 300, div_id)
