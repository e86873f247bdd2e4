#!/usr/bin/env python3
"""Learn the map a question's vector goes through (nexusmem/embed/question_map.py) from the labelled sets.

    python benchmarks/learn_question_map.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...] \
        [--folds 5] [--save DATA_DIR] [--data DATA_DIR] [--write]

It reads the stores `eval_real.py --work W` synced (run that first: nothing is cloned or synced here). For
each store: every node vector, and for each answerable question its vector as `query` embeds it (the text
the retrieval hands the vectors, through the built-in model's query path, without the map) and which
nodes are its labelled answers. `--save DIR` writes one .npz per store; `--data DIR` learns from them
without opening a store.

The map is M = I + A; a question's vector v becomes normalise(M v). It is fitted by the log-probability of
the question's answers under a softmax over nodes by cosine times TAU, each question against the POOL nodes
nearest its plain vector and its answers, with A pulled toward 0 by `--l2`, by full-batch Adam from the
identity. `--folds K` first fits K times with a Kth of the sets held out (sets, not questions) and prints
the vectors-alone MRR of the held-out questions, ranked over every node of their store, with the plain
question and with the map, pooled and by kind. Then it fits on everything; `--write` writes the result to
nexusmem/embed/question_map.bin (float32). Needs numpy (installed with wordllama).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real

TAU = 20.0
POOL = 200
PAD = 8  # room for a question's answers beside its POOL nearest
KINDS = ("symptom", "code", "doc", "multi")
# The fit's defaults (--l2, --iterations, --rate), which held_out_rows.py fits its folds' maps with too.
L2 = 0.03
ITERATIONS = 30
RATE = 0.003


def collect(args: Any, out: Path) -> None:
    """One .npz per store in OUT: D (its node vectors, normalised), Q (its questions' vectors), T (each
    question's answers as rows of D, -1 padded), set, kinds."""
    import numpy as np

    from nexusmem import embed
    from nexusmem.retrieve import query, vector
    from nexusmem.store.vectors import read_all_vectors

    out.mkdir(parents=True, exist_ok=True)
    for qf, store, index in eval_real.synced_stores(args, "learn_question_map"):
        rows = read_all_vectors(store.path)
        identity = embed.Identity.from_json(store.vector_identity_json())
        if not rows or identity is None:
            continue
        seqs, unit = vector.unit_rows(rows)
        ids = dict(store.conn.execute("SELECT seq, id FROM nodes"))
        row_of = {ids[seq]: i for i, seq in enumerate(seqs.tolist()) if seq in ids}
        provider = embed.for_identity(identity, store.vector_token_weights(), None)
        if provider is None:
            continue
        texts, targets, kinds = [], [], []
        seen: list[str] = []
        plain = vector.neighbours
        vector.neighbours = _spy(seen)  # the text the retrieval embeds, read from its own call
        try:
            for q in qf.questions:
                correct, _missing = index.resolve(q)
                answers = sorted(row_of[i] for i in correct if i in row_of)
                if q.kind == "none" or not answers:
                    continue
                seen.clear()
                query.retrieve(store, q.q)
                texts.append(seen[0] if seen else q.q)
                targets.append(answers)
                kinds.append(q.kind)
        finally:
            vector.neighbours = plain
        if not texts:
            continue
        q_vectors = np.array(
            [np.frombuffer(provider.embed([t])[0], dtype=np.float32) for t in texts], dtype=np.float32
        )
        wide = max(len(t) for t in targets)
        t_rows = np.full((len(targets), wide), -1, dtype=np.int64)
        for i, t in enumerate(targets):
            t_rows[i, : len(t)] = t
        np.savez(
            out / f"{qf.set}__{qf.name}.npz",
            D=unit.astype(np.float16),
            Q=q_vectors / np.linalg.norm(q_vectors, axis=1, keepdims=True),
            T=t_rows,
            set=np.array(qf.set),
            kinds=np.array(kinds),
        )


def _spy(seen: list[str]) -> Any:
    """A stand-in for vector.neighbours that notes the text it is asked about in SEEN and finds nothing."""
    from nexusmem.retrieve import vector

    def spy(_store: Any, text: str, **_kw: Any) -> vector.Neighbours:
        seen.append(text)
        return vector.Neighbours([], 0.0)

    return spy


def load(data: Path) -> list[dict[str, Any]]:
    """The stores saved in DATA, each with its questions' candidate pools for fitting."""
    import numpy as np

    stores = []
    for f in sorted(data.glob("*.npz")):
        z = np.load(f)
        d, q, t = z["D"].astype(np.float32), z["Q"], z["T"]
        sims = q @ d.T
        pools, masks = [], []
        for i in range(len(q)):
            answers = [int(x) for x in t[i] if x >= 0]
            near = np.argpartition(-sims[i], min(POOL, len(d) - 1))[:POOL].tolist()
            rows = list(dict.fromkeys(answers + [j for j in near if j not in answers]))[: POOL + PAD]
            rows += [rows[-1]] * (POOL + PAD - len(rows))
            mask = np.zeros(POOL + PAD)
            mask[: len(answers)] = 1
            pools.append(d[rows])
            masks.append(mask)
        stores.append(
            {"set": str(z["set"]), "D": d, "Q": q, "T": t, "kinds": z["kinds"],
             "P": np.array(pools), "M": np.array(masks)}
        )  # fmt: skip
    return stores


def reciprocal_ranks(np: Any, store: dict[str, Any], m: Any) -> list[float]:
    """1/rank of each question's first answer over every node of STORE, its vector through M."""
    v = store["Q"] @ m.T
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    sims = v @ store["D"].T
    out = []
    for i in range(len(v)):
        answers = [x for x in store["T"][i] if x >= 0]
        best = sims[i, answers].max()
        out.append(1.0 / (int((sims[i] > best).sum()) + 1))
    return out


def fit(np: Any, stores: list[dict[str, Any]], *, l2: float, iterations: int, rate: float) -> Any:
    """M = I + A, fitted as the module docstring says."""
    dim = stores[0]["Q"].shape[1]
    a = np.zeros((dim, dim))
    m1, m2 = np.zeros_like(a), np.zeros_like(a)
    count = sum(len(s["Q"]) for s in stores)
    for step in range(1, iterations + 1):
        m = np.eye(dim) + a
        grad = np.zeros_like(a)
        for s in stores:
            raw = s["Q"] @ m.T
            length = np.linalg.norm(raw, axis=1, keepdims=True)
            u = raw / length
            scores = TAU * np.einsum("qkd,qd->qk", s["P"], u)
            scores -= scores.max(1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(1, keepdims=True)
            wanted = p * s["M"]
            wanted /= wanted.sum(1, keepdims=True)
            d_u = TAU * np.einsum("qk,qkd->qd", p - wanted, s["P"])
            d_raw = (d_u - (d_u * u).sum(1, keepdims=True) * u) / length
            grad += d_raw.T @ s["Q"]
        grad = grad / count + l2 * a
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad * grad
        a -= rate * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
    return np.eye(dim) + a


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--folds", type=int, default=5, help="held-out folds of sets first (0: none)")
    ap.add_argument("--save", type=Path, help="write what was read from the stores to this folder")
    ap.add_argument("--data", type=Path, help="learn from a folder --save wrote (no store is opened)")
    ap.add_argument("--l2", type=float, default=L2)
    ap.add_argument("--iterations", type=int, default=ITERATIONS)
    ap.add_argument("--rate", type=float, default=RATE)
    ap.add_argument("--write", action="store_true", help="write nexusmem/embed/question_map.bin")
    args = ap.parse_args(argv)
    args.set = args.set or ["dev"]
    import numpy as np

    data = args.data
    if data is None:
        data = args.save or Path(args.work) / "question-map-data"
        collect(args, data)
    stores = load(data)
    sets = sorted({s["set"] for s in stores})
    print(f"{sum(len(s['Q']) for s in stores)} answerable questions, {len(stores)} stores, {len(sets)} sets")
    if args.folds > 1:
        shuffled = sets[:]
        random.Random(1).shuffle(shuffled)
        plain: list[float] = []
        fitted: list[float] = []
        kinds: list[str] = []
        for k in range(args.folds):
            held = set(shuffled[k :: args.folds])
            m = fit(
                np,
                [s for s in stores if s["set"] not in held],
                l2=args.l2,
                iterations=args.iterations,
                rate=args.rate,
            )
            for s in stores:
                if s["set"] in held:
                    plain += reciprocal_ranks(np, s, np.eye(m.shape[0]))
                    fitted += reciprocal_ranks(np, s, m)
                    kinds += [str(kind) for kind in s["kinds"]]
            print(f"  fold {k + 1}: {len(held)} sets held out")
        b, a, kind_of = np.array(plain), np.array(fitted), np.array(kinds)
        by_kind = "  ".join(
            f"{kd} {b[kind_of == kd].mean():.3f} -> {a[kind_of == kd].mean():.3f}" for kd in KINDS
        )
        print(f"held out, the vectors alone: MRR {b.mean():.4f} -> {a.mean():.4f}  ({by_kind})")
    m = fit(np, stores, l2=args.l2, iterations=args.iterations, rate=args.rate)
    b = np.mean([r for s in stores for r in reciprocal_ranks(np, s, np.eye(m.shape[0]))])
    a = np.mean([r for s in stores for r in reciprocal_ranks(np, s, m)])
    print(f"fitted on all, the vectors alone: MRR {b:.4f} -> {a:.4f} (in-sample)")
    if args.write:
        from nexusmem.embed import question_map

        question_map.QUESTION_MAP_FILE.write_bytes(m.astype("<f4").tobytes())
        print(f"wrote {question_map.QUESTION_MAP_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
