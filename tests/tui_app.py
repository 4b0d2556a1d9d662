"""Launcher for the draft TUI (tests and measure_latency), until `mambo search` without a QUERY
calls run_tui. Same flags as that command will have:

    python tests/tui_app.py --db LIBRARY [--system S] [--record-events] [--wait-ready]
  = python mambo.py --db LIBRARY search [--system S] [--record-events] [--wait-ready]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mambo  # noqa: E402
import tui_draft  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--system", "-s", default=mambo.DEFAULT_SYSTEM)
    ap.add_argument("-n", dest="limit", type=int, default=10)
    ap.add_argument("--record-events", action="store_true")
    ap.add_argument("--wait-ready", action="store_true")
    args = ap.parse_args()
    db = mambo.DB(args.db, create=False)
    try:
        mambo.sync_systems(db)
        return tui_draft.run_tui(db, args.system, limit=args.limit, record_events=args.record_events,
                                 wait_ready=args.wait_ready)
    except mambo.MamboError as e:
        print(f"mambo: {e.format_message()}", file=sys.stderr)
        return 2
    finally:
        db.close()


if __name__ == "__main__":
    sys.exit(main())
