"""Throughput of nexusmem.redact over ordinary source-diff text.

Builds ~10 MB of realistic `git log -p` output (Python/JS/YAML/shell hunks that mention tokens, passwords,
URLs, flags and headers the way real code does, with no secrets in it) and times `redact()` on it, plus the
same text with a few secrets sprinkled in (so the replace path is exercised too).

    .venv/bin/python benchmarks/bench_redact.py [--mb 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexusmem.redact import redact, redact_counts

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

SECRETS = (
    "+export GITHUB_TOKEN=ghp_FAKE0000000000000000000000000example0",
    '+curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.ZmFrZXNpZ25hdHVyZQ" x',
    "+mysql -uroot -pNotARealPassw0rd appdb",
    "+AWS_ACCESS_KEY_ID=AKIAFAKE0000EXAMPLE0",
)


def make_text(megabytes: float, secrets: bool, seed: int = 7) -> str:
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    lines: list[str] = []
    size = 0
    while size < target:
        line = rng.choice(HUNK_LINES)
        if secrets and rng.random() < 0.001:
            line = rng.choice(SECRETS)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def bench(text: str, repeat: int) -> list[float]:
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        redact(text)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of the generated text in MB")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for secrets in (False, True):
        text = make_text(args.mb, secrets)
        out, counts = redact_counts(text)
        times = bench(text, args.repeat)
        label = "with secrets" if secrets else "clean"
        mb = len(text.encode()) / 1e6
        best, median = min(times), statistics.median(times)
        print(
            f"{label:13} {mb:6.1f} MB  best {best * 1000:7.1f} ms  median {median * 1000:7.1f} ms  "
            f"({mb / best:6.1f} MB/s)  redacted={sum(counts.values())} changed={out != text}"
        )


if __name__ == "__main__":
    main()
