"""The embedding pass against its own model: how much more than the model's own work does a pass cost?

    python benchmarks/bench_embed_pass.py [--nodes 60000]
    python benchmarks/bench_embed_pass.py --local-model DIR --nodes 1000   # the opt-in local encoder

Builds a fresh store of NODES synthetic nodes (commit-like titles, diff-like bodies, varied words). Then
(a) times the builtin model embedding exactly the texts the pass embeds, in the pass's batch size (the
model is loaded before timing); (b) runs the embedding pass (nexusmem.embed.index.embed_pending) over the
whole store with a provider that hands back the vectors (a) computed, in the same order: what (b) measures
is everything the pass does besides the model (reading the nodes, the vec0 and bookkeeping writes, one
transaction per batch). The pass's cost relative to its model is (a + b) / a. Replaying the vectors keeps
the model's run-to-run noise (large on a shared machine) out of the pass's own figure.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import random
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from nexusmem.embed import DEFAULT_BATCH, from_config
from nexusmem.embed.index import BODY_CHARS, embed_pending, node_text
from nexusmem.nodes import Node
from nexusmem.store.db import open_store

WORDS = [
    "cache",
    "retry",
    "budget",
    "timeout",
    "upload",
    "parser",
    "config",
    "lock",
    "writer",
    "reader",
    "index",
    "query",
    "token",
    "budget",
    "shell",
    "hook",
    "commit",
    "diff",
    "docs",
    "sync",
    "vector",
    "model",
    "server",
    "client",
    "socket",
    "thread",
    "queue",
    "worker",
    "flush",
    "journal",
    "wal",
    "schema",
    "migration",
    "cursor",
    "registry",
    "project",
    "redact",
    "secret",
    "prompt",
    "history",
    "rank",
    "score",
    "recency",
    "signal",
]


def make_nodes(count: int) -> list[Node]:
    rng = random.Random(7)
    nodes = []
    for n in range(count):
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10)))
        lines = ("+ " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(12))
        nodes.append(
            Node(
                project="bench", kind="git_commit", source="git", natural_key=f"k{n}", ref=f"r{n}",
                title=f"fix: {title}", body="\n".join(lines), ts=1_700_000_000_000 + n * 1000, signal=0.5,
            )
        )  # fmt: skip
    return nodes


class Replay:
    """A provider with the builtin model's identity that returns vectors already computed, in order."""

    def __init__(self, real: object, vectors: list[bytes]) -> None:
        self.name, self.model = real.name, real.model  # type: ignore[attr-defined]
        self._vectors, self._at = vectors, 0

    def embed(self, texts: list[str]) -> list[bytes]:
        out = self._vectors[self._at : self._at + len(texts)]
        self._at += len(texts)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=60_000)
    parser.add_argument(
        "--skip-model",
        action="store_true",
        help="replay random unit vectors instead of the model's: only the pass's own cost, in seconds",
    )
    parser.add_argument(
        "--local-model",
        metavar="DIR",
        help="time the 'local' provider with this sentence-transformer model directory instead of the built-in",
    )
    args = parser.parse_args()
    config: dict[str, Any] = {"embedding": {"provider": "builtin"}}
    if args.local_model:
        config = {"embedding": {"provider": "local", "model": args.local_model}}
    provider = from_config(config)
    assert provider is not None
    if not args.skip_model:
        provider.embed(["warm up the model"])
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "memory.db", create=True) as store:
        with store.transaction():
            store.upsert(make_nodes(args.nodes))
        rows = store.unembedded(0, args.nodes, BODY_CHARS)
        texts = [node_text(title, body) for _s, _h, title, body in rows]
        vectors: list[bytes] = []
        t0 = time.perf_counter()
        if args.skip_model:
            rng = random.Random(1)
            dim = provider.dim
            vectors = [struct.pack(f"<{dim}f", *(rng.gauss(0, 1) for _ in range(dim))) for _ in texts]
        else:
            for at in range(0, len(texts), DEFAULT_BATCH):
                vectors.extend(bytes(v) for v in provider.embed(texts[at : at + DEFAULT_BATCH]))
        model = time.perf_counter() - t0
        t0 = time.perf_counter()
        summary = embed_pending(store, config, provider=Replay(provider, vectors))  # type: ignore[arg-type]
        rest = time.perf_counter() - t0
        assert summary.embedded == args.nodes, summary
    print(f"{args.nodes} nodes, batch {DEFAULT_BATCH}, provider {provider.name} {provider.model}")
    if args.skip_model:
        print(f"the pass besides the model:  {rest:.2f} s")
        return
    print(f"model alone:                 {model:.2f} s ({args.nodes / model:,.0f} texts/s)")
    print(f"the pass besides the model:  {rest:.2f} s")
    print(f"pass / model:                {(model + rest) / model:.2f}x")


if __name__ == "__main__":
    main()
