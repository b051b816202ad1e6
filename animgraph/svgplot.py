"""A small SVG plotter for the demos: time panels with axes, lines and shaded bands (no plotting library)."""

import numpy as np


class Panel:
    """One plot area of the SVG: data ranges mapped to pixels."""

    def __init__(self, x, y, w, h, t1, lo, hi):
        self.x, self.y, self.w, self.h, self.t1, self.lo, self.hi = x, y, w, h, t1, lo, hi

    def px(self, t):
        return self.x + self.w * t / self.t1

    def py(self, v):
        return self.y + self.h * (1.0 - (v - self.lo) / (self.hi - self.lo))

    def line(self, t, v, color, width=1.5, dash=""):
        pts = " ".join(f"{self.px(a):.1f},{self.py(b):.1f}" for a, b in zip(t, v))
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        return f'<polyline fill="none" stroke="{color}" stroke-width="{width}"{extra} points="{pts}"/>'

    def band(self, t0, t1, color, v0=None, v1=None, opacity=1.0):
        y0 = self.y if v1 is None else self.py(v1)
        y1 = self.y + self.h if v0 is None else self.py(v0)
        return (f'<rect x="{self.px(t0):.1f}" y="{y0:.1f}" width="{max(self.px(t1) - self.px(t0), 0.5):.1f}" '
                f'height="{y1 - y0:.1f}" fill="{color}" fill-opacity="{opacity}"/>')

    def axes(self, label, ticks):
        out = [f'<rect x="{self.x}" y="{self.y}" width="{self.w}" height="{self.h}" fill="none" stroke="#444"/>',
               f'<text x="{self.x}" y="{self.y - 6}" font-size="13">{label}</text>']
        for v in ticks:
            y = self.py(v)
            out.append(f'<line x1="{self.x - 4}" y1="{y:.1f}" x2="{self.x}" y2="{y:.1f}" stroke="#444"/>')
            out.append(f'<text x="{self.x - 7}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{v:g}</text>')
        for s in range(int(self.t1) + 1):
            x = self.px(s)
            out.append(f'<line x1="{x:.1f}" y1="{self.y + self.h}" x2="{x:.1f}" y2="{self.y + self.h + 4}" stroke="#444"/>')
            out.append(f'<text x="{x:.1f}" y="{self.y + self.h + 16}" font-size="11" text-anchor="middle">{s}</text>')
        return out


def runs(mask):
    """(start, stop) index pairs of the True runs of a bool array."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[::2], edges[1::2]))
