"""Redaction: coverage on the measured corpus, and throughput on a realistic mix (optionally vs detect-secrets).

Coverage: every secret of tests/fixtures/redaction_corpus.json placed in its context must be replaced exactly
(the value by a placeholder, the rest kept), and every ordinary line must come out unchanged.

Throughput: ~10 MB made the way sync calls `redact()` -- one call per shell command, per commit message,
per file diff and per Markdown section -- from code-diff hunks (50% of the bytes), Markdown prose (20%),
commit messages (15%) and shell commands (15%), with 0.1% of the lines replaced by corpus secrets. MB/s is
reported by wall clock and by CPU time (`time.process_time`: steadier on a busy machine), with the load.

`--against REF` also loads the redaction engine (nexusmem/redact_engine.py, or redact.py before it moved) as it is at git REF (e.g. `main`, a commit) and times it and
the working tree's engine alternately, round by round, on the same texts (a loaded machine slows both
alike), and counts the texts whose output differs.

`--detect-secrets` runs detect-secrets (pip install detect-secrets; not a dependency) on the same corpus
(its file scanner with the default plugins and filters, each row as its own .txt file; a row counts as
caught if anything is reported in it) and times its file scan over the same mix.

`--long-lines KB` instead times one-line texts of KB kilobytes (base64, a minified query string, runs of
one character, words) with a rule's keyword before or after, and prints the slowest: what a vendored bundle
or an inlined binary costs a sync.

    .venv/bin/python benchmarks/bench_redact.py [--mb 10] [--repeat 3] [--against REF] [--detect-secrets]
    .venv/bin/python benchmarks/bench_redact.py --long-lines 200 --repeat 1
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexusmem.redact import PLACEHOLDER_RE, redact, redact_counts

CORPUS_PATH = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "redaction_corpus.json"

HUNK_LINES = (
    "diff --git a/nexusmem/store/nodes.py b/nexusmem/store/nodes.py",
    "index 3f4e2a1..9b8c7d6 100644",
    "--- a/nexusmem/store/nodes.py",
    "+++ b/nexusmem/store/nodes.py",
    "@@ -120,14 +120,19 @@ class NodeStore:",
    "     def get(self, node_id: str) -> Node | None:",
    '-        row = self.conn.execute("SELECT * FROM nodes WHERE id = ?", (node_id,)).fetchone()',
    '+        row = self._conn.execute("SELECT * FROM nodes WHERE id = ? AND deleted = 0", (node_id,)).fetchone()',
    "+        if row is None:",
    "+            return None",
    "         return Node.from_row(row)",
    "+    def login(self, username: str, password: str) -> Session:",
    '+        token = self.session.get("token")',
    '+        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}',
    '+        url = "https://api.example.com/v1/users/" + str(user_id)',
    '+        parser.add_argument("--password", help="database password (read from $DB_PASSWORD)")',
    '+        api_key = os.environ.get("OPENAI_API_KEY", "")',
    "+        max_tokens: int = 4096",
    '+    cache_key = f"user:{user_id}:{sha256(payload).hexdigest()[:16]}"',
    "+import { useState, useEffect } from 'react';",
    "+export const API_URL = process.env.API_URL ?? 'http://localhost:8080/api';",
    "+  const [secretVisible, setSecretVisible] = useState(false);",
    "+      - run: pip install -e '.[test]' && python -m pytest -q",
    "+        env:",
    "+          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "+  color: #1e90ff; background: rgba(0, 0, 0, 0.4); max-width: 72ch;",
    '+docker run --rm -p 8080:80 -v "$PWD:/src" nginx:1.25-alpine',
    "+git log -p --stat -- src/ | less -R",
    "+mkdir -p build/out && cp -r assets/ build/out/",
    "+    # The password hash uses argon2id; tokens expire after 15 minutes (see docs/auth.md).",
    "+    assert uuid.UUID('7c9e6679-7425-40de-944b-e07fc1f90ae7').version == 4",
    "+    expected = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'",
    " ",
    "+for (const [key, value] of Object.entries(config)) { out[key.toUpperCase()] = value; }",
    "+SELECT id, title FROM docs WHERE project_id = :project AND ts >= :since ORDER BY ts DESC LIMIT 50;",
)
PROSE = (
    "The sync reads new commits first, then the shell log, then the docs; each source keeps its own cursor.",
    "Tokens expire after 15 minutes; the client refreshes them in the background and retries once.",
    "See [the hygiene guide](docs/hygiene.md) for `forget` and `scrub`, and `nexusmem status` for counts.",
    "- `--budget N`: the token budget of the answer (default 2000).",
    "Run `make test` before pushing; CI runs the same target with `PYTEST_ARGS=-x`.",
    "",
    "## Configuration",
    "```bash",
    "export NEXUSMEM_HOME=~/.nexusmem",
    "nexusmem sync --json | jq '.sources[] | {name, added}'",
    "```",
    "| Key | Default | Meaning |",
    "| `limits.maxBodyChars` | 20000 | longest stored body |",
)
COMMIT_LINES = (
    "fix(store): keep the WAL small after a forget",
    "feat: read the API key from the environment instead of the config file",
    "refactor(auth): split token refresh from token validation",
    "The old code held the write lock while embedding; a second sync then waited 15 s and gave up.",
    "Measured on the 10k-commit fixture: 2.1 s -> 0.4 s.",
    "Closes #412.",
    "",
    "Co-authored-by: Jane Doe <jane@example.com>",
)


def load_corpus() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    return data


def placed(row: dict[str, str]) -> str:
    return row["context"].replace("{s}", row["value"])


def make_calls(megabytes: float, secrets: bool, seed: int = 7) -> list[str]:
    """The texts sync would hand to redact(), one per call, about MEGABYTES in all."""
    rng = random.Random(seed)
    corpus = load_corpus()
    shell = [line for line in corpus["ordinary"] if "\n" not in line]
    secret_texts = [placed(row) for row in corpus["secrets"]]
    target = int(megabytes * 1_000_000)
    calls: list[str] = []
    size = 0

    def line(pool: tuple[str, ...] | list[str]) -> str:
        if secrets and rng.random() < 0.001:
            return rng.choice(secret_texts)
        return rng.choice(pool)

    while size < target:
        roll = rng.random()
        if roll < 0.50:
            text = "\n".join(line(HUNK_LINES) for _ in range(rng.randint(20, 80)))
        elif roll < 0.70:
            text = "\n".join(line(PROSE) for _ in range(rng.randint(5, 30)))
        elif roll < 0.85:
            text = "\n".join(line(COMMIT_LINES) for _ in range(rng.randint(1, 8)))
        else:
            text = line(shell)
        calls.append(text)
        size += len(text.encode()) + 1
    return calls


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds over REPEAT runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def engine_at(ref: str) -> ModuleType:
    """The redaction engine as it is at git REF, loaded as a module of its own: nexusmem/redact_engine.py,
    or nexusmem/redact.py at refs from before the engine moved out of it."""
    root = Path(__file__).resolve().parent.parent
    for name in ("nexusmem/redact_engine.py", "nexusmem/redact.py"):
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"{ref}:{name}"], capture_output=True, text=True
        )
        if shown.returncode == 0:
            source = shown.stdout
            break
    else:
        raise SystemExit(f"no redaction engine at {ref}")
    path = Path(tempfile.mkdtemp()) / "redact_at_ref.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("redact_at_ref", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["redact_at_ref"] = module
    spec.loader.exec_module(module)
    return module


def side_by_side(ref: str, megabytes: float, repeat: int) -> None:
    """The engine at REF and the working tree's, alternately on the same texts: best CPU time of each."""
    other = engine_at(ref)
    for secrets in (False, True):
        calls = make_calls(megabytes, secrets)
        mb = sum(len(c.encode()) + 1 for c in calls) / 1e6
        differing = sum(other.redact(c) != redact(c) for c in calls)
        best = {ref: float("inf"), "this tree": float("inf")}
        for _ in range(repeat):
            for name, fn in ((ref, other.redact), ("this tree", redact)):
                start = time.process_time()
                for c in calls:
                    fn(c)
                best[name] = min(best[name], time.process_time() - start)
        label = "mix+secrets" if secrets else "mix"
        rates = ", ".join(f"{name} {mb / cpu:5.1f} MB/s cpu" for name, cpu in best.items())
        print(f"side by side {label:12} {mb:5.1f} MB: {rates}; outputs differing: {differing}/{len(calls)}")


def coverage_ours(corpus: dict[str, Any]) -> dict[str, Any]:
    exact = gone = 0
    missed: list[str] = []
    for row in corpus["secrets"]:
        out = redact(placed(row))
        before, after = row["context"].split("{s}")
        middle = out[len(before) : len(out) - len(after)]
        if row["value"] not in out:
            gone += 1
        if out.startswith(before) and out.endswith(after) and PLACEHOLDER_RE.fullmatch(middle):
            exact += 1
        else:
            missed.append(row["type"])
    changed = [line for line in corpus["ordinary"] if redact(line) != line]
    return {"exact": exact, "gone": gone, "missed": missed, "false_positives": changed}


def detect_secrets_findings(texts: list[str], suffix: str) -> list[bool]:
    """Whether detect-secrets reports anything in each of TEXTS, each scanned as its own file (one file per
    row: its collection de-duplicates equal secret values within a file, e.g. every GitHub token's `ghp`)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    found = []
    with tempfile.TemporaryDirectory() as tmp, default_settings():
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"row{i}{suffix}")
            Path(path).write_text(text + "\n", encoding="utf-8")
            collection = SecretsCollection()
            collection.scan_file(path)
            found.append(any(True for _ in collection))
    return found


def coverage_detect_secrets(corpus: dict[str, Any]) -> dict[str, Any]:
    rows = detect_secrets_findings([placed(row) for row in corpus["secrets"]], ".txt")
    missed = [row["type"] for row, hit in zip(corpus["secrets"], rows, strict=True) if not hit]
    plain = detect_secrets_findings(corpus["ordinary"], ".txt")
    fps = [line for line, hit in zip(corpus["ordinary"], plain, strict=True) if hit]
    return {"caught": len(rows) - len(missed), "missed": missed, "false_positives": fps}


# One-line texts of the shapes minified bundles and inlined binaries have (hundreds of KB with no line break),
# each with a rule's keyword before or after it: a rule that reads to the end of the line from every place it
# tries costs the square of the line's length there (a 550 KB line took hours until the fifty-second wave).
LONG_LINE_KEYWORDS = (
    "base64",
    ".pgpass",
    "token=",
    "password",
    "secret",
    "Authorization: Basic",
    "export X=",
)


def long_line_bodies(size: int) -> dict[str, str]:
    """SIZE-character lines: dense base64, a minified query string, `=` runs, `x` runs, spaced words."""
    import base64

    raw = base64.b64encode(bytes(random.Random(7).randrange(256) for _ in range(size))).decode()[:size]
    return {
        "base64": raw,
        "query": ("key=value&token=abc&" * (size // 20 + 1))[:size],
        "equals": "=" * size,
        "letters": "x" * size,
        "words": ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size],
    }


def long_lines(kb: int, repeat: int) -> None:
    """The slowest keyword/shape pairs of LONG_LINE_KEYWORDS x long_line_bodies, and the time for all."""
    rows: list[tuple[float, str, str]] = []
    for shape, body in long_line_bodies(kb * 1000).items():
        for keyword in LONG_LINE_KEYWORDS:
            for text in (f"{keyword} {body}", f"{body} {keyword}"):
                wall, _cpu = timed(lambda text=text: redact(text), repeat)
                rows.append((wall, shape, keyword))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"long lines: {len(rows)} one-line texts of {kb} KB, {total:.2f} s in all; slowest:")
    for wall, shape, keyword in rows[:5]:
        print(f"  {wall * 1000:8.1f} ms  {shape:8} with {keyword!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of the generated mix in MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--detect-secrets", action="store_true", help="also measure detect-secrets")
    parser.add_argument(
        "--against", metavar="REF", help="also time nexusmem/redact.py at this git ref, alternately"
    )
    parser.add_argument("--verbose", action="store_true", help="list misses and false positives")
    parser.add_argument(
        "--long-lines", type=int, metavar="KB", help="only time one-line texts of KB kilobytes (e.g. 200)"
    )
    args = parser.parse_args()
    if args.long_lines:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        long_lines(args.long_lines, args.repeat)
        return

    corpus = load_corpus()
    n_secrets, n_plain = len(corpus["secrets"]), len(corpus["ordinary"])
    n_types = len({row["type"] for row in corpus["secrets"]})
    print(f"corpus: {n_secrets} secrets of {n_types} types, {n_plain} ordinary lines")
    ours = coverage_ours(corpus)
    print(
        f"nexusmem   caught {ours['gone']}/{n_secrets} (exactly replaced {ours['exact']}), "
        f"false positives {len(ours['false_positives'])}/{n_plain}"
    )
    if args.verbose:
        print("  missed:", sorted(set(ours["missed"])), "\n  changed:", ours["false_positives"])
    if args.detect_secrets:
        theirs = coverage_detect_secrets(corpus)
        print(
            f"detect-secrets caught {theirs['caught']}/{n_secrets} (rows with a finding), "
            f"false positives {len(theirs['false_positives'])}/{n_plain}"
        )
        if args.verbose:
            print("  missed types:", sorted(set(theirs["missed"])))
            print("  flagged ordinary lines:", theirs["false_positives"])

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for secrets in (False, True):
        calls = make_calls(args.mb, secrets)
        mb = sum(len(c.encode()) + 1 for c in calls) / 1e6
        redacted = sum(sum(redact_counts(c)[1].values()) for c in calls)
        wall, cpu = timed(lambda calls=calls: [redact(c) for c in calls], args.repeat)
        label = "mix+secrets" if secrets else "mix"
        print(
            f"nexusmem   {label:12} {mb:5.1f} MB in {len(calls)} calls: {mb / wall:6.1f} MB/s wall, "
            f"{mb / cpu:6.1f} MB/s cpu, redacted={redacted}"
        )
    if args.against:
        side_by_side(args.against, args.mb, args.repeat)
    if args.detect_secrets:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings

        calls = make_calls(args.mb, True)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mix.txt")
            Path(path).write_text("\n".join(calls) + "\n", encoding="utf-8")
            mb = os.path.getsize(path) / 1e6

            def scan() -> None:
                collection = SecretsCollection()
                with default_settings():
                    collection.scan_file(path)

            wall, cpu = timed(scan, 1)
        print(
            f"detect-secrets mix+secrets {mb:5.1f} MB: {mb / wall:6.1f} MB/s wall, {mb / cpu:6.1f} MB/s cpu"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
