#!/usr/bin/env python3
"""The import-structure pass: files parsed per second on a first pass, and the cost of the passes after it.

    python benchmarks/bench_structure.py [--files 5000] [--runs 3] [--repo PATH]

Generates a git repository of FILES source files in five languages (Python 50 %, TypeScript 20 %, Go, Rust
and Java 10 % each; every file imports about five others, a third of them unresolvable) in a temp dir and
times, in-process, each over RUNS runs (median):
- first: every file read from git and parsed, edges resolved and written to a fresh store;
- no-op: nothing changed (ls-files, compare blobs, resolve, no write);
- one file: one file changed and committed, so one file is parsed again.
With --repo, also times a dry first pass (nothing written) over that real repository's tracked files.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexusmem.store.db import open_store
from nexusmem.structure import scan

CONFIG = {"structure": {"maxFileBytes": 1_000_000}}


def git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@x")  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)


def generate(repo: Path, files: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    git(repo, "init", "-q", "-b", "main")
    langs = ["py"] * 10 + ["ts"] * 4 + ["go"] * 2 + ["rs"] * 2 + ["java"] * 2
    plan = [(n, langs[n % len(langs)]) for n in range(files)]
    by_lang: dict[str, list[int]] = {}
    for n, lang in plan:
        by_lang.setdefault(lang, []).append(n)
    (repo / "go.mod").write_text("module example.com/gen\n", encoding="utf-8")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "src").mkdir()
    (repo / "src" / "lib.rs").write_text("", encoding="utf-8")
    filler = "\n".join(f"# line {i} of ordinary code and comments" for i in range(60))
    for n, lang in plan:
        peers = rnd.sample(by_lang[lang], min(5, len(by_lang[lang])))
        if lang == "py":
            body = "\n".join(
                f"from pkg.m{p} import thing{p}" if p % 3 else f"import missing{p}" for p in peers
            )
            path = repo / "pkg" / f"m{n}.py"
            text = f"{body}\n{filler}\n\ndef thing{n}():\n    return {n}\n"
        elif lang == "ts":
            body = "\n".join(
                f"import {{ t{p} }} from './t{p}'" if p % 3 else f"import x{p} from 'pkg{p}'" for p in peers
            )
            path = repo / "web" / f"t{n}.ts"
            text = f"{body}\n{filler.replace('#', '//')}\nexport const t{n} = {n}\n"
        elif lang == "go":
            body = "\n".join(f'\t"example.com/gen/g/p{p}"' for p in peers)
            path = repo / "g" / f"p{n}" / "p.go"
            text = f'package p{n}\n\nimport (\n{body}\n\t"fmt"\n)\n{filler.replace("#", "//")}\n'
        elif lang == "rs":
            body = "\n".join(f"use crate::r{p}::Thing;" for p in peers)
            path = repo / "src" / f"r{n}.rs"
            text = f"{body}\nuse std::io;\n{filler.replace('#', '//')}\npub struct Thing;\n"
        else:
            body = "\n".join(f"import com.gen.j{p}.C{p};" for p in peers)
            path = repo / "java" / "com" / "gen" / f"j{n}" / f"C{n}.java"
            text = f"package com.gen.j{n};\n{body}\nimport java.util.List;\n{filler.replace('#', '//')}\nclass C{n} {{}}\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "generated")


def one_pass(repo: Path, db: Path) -> tuple[float, scan.StructurePlan]:
    with open_store(db, create=True) as store:
        t0 = time.perf_counter()
        result = scan.run(repo, store, CONFIG)
        return time.perf_counter() - t0, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repo", type=Path, help="also time a dry first pass over this real repository")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        t0 = time.perf_counter()
        generate(repo, args.files)
        print(f"generated {args.files} files in {time.perf_counter() - t0:.1f} s")
        first, noop, single = [], [], []
        result = None
        for run in range(args.runs):
            db = Path(tmp) / f"store{run}.db"
            seconds, result = one_pass(repo, db)
            first.append(seconds)
            noop.append(one_pass(repo, db)[0])
            target = repo / "pkg" / "m0.py"
            target.write_text(target.read_text(encoding="utf-8") + f"\n# run {run}\n", encoding="utf-8")
            git(repo, "commit", "-q", "-am", f"touch {run}")
            seconds, step = one_pass(repo, db)
            assert len(step.parsed) == 1, step.parsed
            single.append(seconds)
        assert result is not None
        med = statistics.median(first)
        print(f"first pass: {statistics.median(first):.3f} s median ({result.files} files, {result.edges} edges)"
              f" = {result.files / med:,.0f} files/s")  # fmt: skip
        print(f"no-op pass: {statistics.median(noop) * 1000:.1f} ms median")
        print(f"one file changed: {statistics.median(single) * 1000:.1f} ms median")
    if args.repo:
        t0 = time.perf_counter()
        plan = scan.plan(args.repo.resolve(), scan.Nothing(), 1_000_000)
        seconds = time.perf_counter() - t0
        print(f"{args.repo}: dry first pass {seconds:.3f} s ({plan.files} files, {plan.edges} edges)"
              f" = {plan.files / seconds:,.0f} files/s")  # fmt: skip


if __name__ == "__main__":
    main()
