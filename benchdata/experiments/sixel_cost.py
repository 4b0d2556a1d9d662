"""What drawing the search screen's preview as sixel costs (tui_images.sixel, our encoder with a
fixed 216-colour palette): encode CPU time (process time: steadier than wall time on a shared
machine) and size for the stored previews of a library, at the
preview pane of an 80x24 and a 120x40 terminal (10x20-pixel cells), beside PNG for kitty/iTerm2.

    .venv/bin/python benchdata/experiments/sixel_cost.py LIB [N]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import apsw  # noqa: E402

from mambomeme.lab.product import CELL_PX, decode_preview, fit, png, sixel  # noqa: E402

# The preview pane's picture rectangle (rows, cols) at 80x24 with Ctrl-/ (half the width) and at
# 120x40 (the list keeps 3/5), under the caption line: tui.picture's geometry.
PANES = {"80x24": (19, 39), "120x40": (35, 47)}


def main() -> None:
    db, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50
    con = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    previews = [decode_preview(bytes(r[0])) for r in con.execute("SELECT data FROM previews LIMIT ?", (n,))]
    print(f"{len(previews)} stored previews of {db}")
    print("| pane | sixel encode CPU median | p90 | sixel bytes median | PNG encode CPU median | PNG bytes median |")
    print("|---|---|---|---|---|---|")
    for name, (rows, cols) in PANES.items():
        times, sizes, ptimes, psizes = [], [], [], []
        for p in previews:
            place = fit(p.width, p.height, (0, 0, rows, cols), CELL_PX)
            sixel.cache_clear()
            png.cache_clear()
            t = time.process_time()
            s = sixel(p.width, p.height, p.rgb, place)
            times.append(time.process_time() - t)
            sizes.append(len(s))
            t = time.process_time()
            data = png(p.width, p.height, p.rgb)
            ptimes.append(time.process_time() - t)
            psizes.append(len(data))
        p90 = sorted(times)[int(0.9 * (len(times) - 1))]
        print(
            f"| {name} ({rows}x{cols} cells) | {statistics.median(times) * 1000:.0f} ms | {p90 * 1000:.0f} ms "
            f"| {statistics.median(sizes) / 1000:.0f} KB | {statistics.median(ptimes) * 1000:.1f} ms "
            f"| {statistics.median(psizes) / 1000:.0f} KB |"
        )


if __name__ == "__main__":
    main()
