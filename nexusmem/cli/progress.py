"""Sync progress on stderr. click is imported only when a bar is drawn, so that `nexusmem sync` with nothing
to do (cli/plain.py) never imports it."""

from __future__ import annotations

import sys
import time
from typing import Any

# What each phase counts, so the bar says "files" for docs rather than "nodes".
UNITS = {
    "git": "commits",
    "diff": "commits",
    "docs": "files",
    "shell": "bytes",
    "changelog": "entries",
    "session": "sessions",
    "embed": "items",
}


class Progress:
    """Sync progress on stderr, only when stderr is a terminal (never in hooks, pipes or tests): a click
    progress bar with the total, position, rate and ETA where the phase knows its total, otherwise one line
    with the count and rate. Phases follow each other; a new label ends the previous bar."""

    def __init__(self, enabled: bool) -> None:
        # A terminal that says it understands no control sequence (TERM=dumb: Emacs shells, some CI logs)
        # gets none: the bar hides and shows the cursor and redraws its line.
        import os

        self.enabled = enabled and sys.stderr.isatty() and os.environ.get("TERM", "") != "dumb"
        self.label: str | None = None
        self.started = 0.0
        self.bar: Any = None
        self.line = False

    def __call__(self, label: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if label != self.label:
            self.finish()
            self.label, self.started = label, time.monotonic()
        unit = UNITS.get(label, "nodes")
        elapsed = time.monotonic() - self.started
        # A rate needs some time behind it: the first report of a phase often comes within a millisecond.
        rate = f"{done / elapsed:,.0f} {unit}/s" if elapsed >= 0.5 else ""
        if self.bar is None and total and done < total:  # (done == total: the phase is over, no bar to draw)
            import click  # only when a bar is drawn: a sync with nothing to do never imports it

            self.bar = click.progressbar(
                length=total,
                label=f"  syncing {label} ({unit})",
                file=sys.stderr,
                show_pos=True,
                show_eta=True,
                item_show_func=lambda item: item,
            )
            if self.line:  # counted before the total was known
                sys.stderr.write("\r" + " " * 60 + "\r")
                self.line = False
            self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(max(0, min(done, self.bar.length) - self.bar.pos), rate)
            return
        shown = f"  syncing {label}: {done:,} {unit}" + (f" ({rate})" if rate else "")
        sys.stderr.write("\r" + shown.ljust(60))
        sys.stderr.flush()
        self.line = True

    def finish(self) -> None:
        """End the current phase's bar or line, leaving the terminal clean."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        if self.line:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()
            self.line = False
