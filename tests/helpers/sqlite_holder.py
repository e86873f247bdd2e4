"""Another process holding a memory's SQLite file: a lock or a transaction a test needs held while it runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def held(db: Path, how: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holding DB as HOW says (Python statements on its connection `c`) until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlean, sys; c = sqlean.connect(sys.argv[1], isolation_level=None);"
            f" {how}; print('held', flush=True); sys.stdin.read()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.communicate("")
