#!/usr/bin/env python3
"""Redaction on real code: which lines this tree's engine changes that the engine at REF left alone.

    python benchmarks/compare_redaction.py REF DIR [DIR ...] [--show 60]

Every UTF-8 text file under each DIR (at most 400 KB each) is redacted whole by both engines; the lines that
differ are counted and the first --show of them printed, old above new. Meant for a tree of ordinary source
code (e.g. `git --git-dir=<mirror> archive HEAD | tar -x`): any line that differs there is a new false
positive, or a secret the old engine missed. Not a test: it reads whatever DIR holds.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_redact

from nexusmem import redact_engine

MAX_BYTES = 400_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="the git ref whose engine to compare with")
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=60, help="how many differing lines to print")
    args = parser.parse_args()
    old = bench_redact.engine_at(args.ref)
    files = size = 0
    differing: list[tuple[str, str, str]] = []
    for top in args.dirs:
        for folder, _dirs, names in os.walk(top):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8") as handle:
                        text = handle.read(MAX_BYTES + 1)
                except (OSError, UnicodeDecodeError):
                    continue
                if len(text) > MAX_BYTES:
                    continue
                files += 1
                size += len(text)
                before, after = old.redact(text), redact_engine.redact(text)
                if before != after:
                    pairs = zip(before.splitlines(), after.splitlines())
                    differing += [(path, a.strip(), b.strip()) for a, b in pairs if a != b]
    print(f"{files:,} files, {size / 1e6:.1f} MB: {len(differing):,} differing line(s) against {args.ref}")
    for path, before_line, after_line in differing[: args.show]:
        print(f"{path}\n  old {before_line[:160]}\n  new {after_line[:160]}")


if __name__ == "__main__":
    main()
