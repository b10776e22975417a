"""The dashboard's charts as geometry for SVG drawn in the template: bars scaled to the largest
figure, nothing computed in the browser (the pages run no script). Each chart's figures are
also its table, so a chart only ever shows what the table beside it says."""
from __future__ import annotations

from dataclasses import dataclass

WIDTH, HEIGHT = 720, 200  # the drawing's own units; the stylesheet scales it to the page
ROW = 28  # a horizontal bar's row, name and bar


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: int  # which of the chart's series: its fill pattern and legend entry


def columns(series: list[list[int]]) -> list[list[Bar]]:
    """Grouped upright bars: `series[s][i]` is series s's figure in category i (a day, a month).
    Negative figures are drawn by their size (a redemption is a debit, shown as a height)."""
    categories = len(series[0]) if series else 0
    if not categories:
        return []
    largest = max((abs(value) for values in series for value in values), default=0) or 1
    slot = WIDTH / categories
    gap = slot * 0.15
    width = (slot - gap) / len(series)
    drawn = []
    for index in range(categories):
        group = []
        for number, values in enumerate(series):
            height = HEIGHT * abs(values[index]) / largest
            group.append(Bar(round(index * slot + gap / 2 + number * width, 2),
                             round(HEIGHT - height, 2), round(width, 2), round(height, 2),
                             number))
        drawn.append(group)
    return drawn


def rows(values: list[int], *, label_width: int = 220) -> list[Bar]:
    """Horizontal bars, one row per figure, after a column for the row's name."""
    largest = max((abs(value) for value in values), default=0) or 1
    room = WIDTH - label_width - 120  # the figure is written after the bar
    return [Bar(label_width, index * ROW + 4, round(room * abs(value) / largest, 2), ROW - 8, 0)
            for index, value in enumerate(values)]
