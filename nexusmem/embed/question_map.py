"""A question's vector, moved toward the kind of text that answers questions: a linear map of the built-in
model's 256-d vectors, learned from the labelled sets and applied to the question only.

A question and its answer are different kinds of text. "Since when does it error out on a broken optional
file rather than swallowing it?" is a user's account of what they saw; the commit that answers it says
"Parsing errors even for non required file", and its change words name `File::collect`. Pooled word vectors
put the two apart however rare their words are, and the same way in every project: the words of a report
("silently", "ran", "my app") pull a question away from every change. A map M learned over many projects'
labelled questions (the question's vector v becomes normalise(M v); the stored vectors are not touched, so
nothing is embedded again) moves questions toward where their answers lie. Node-to-node similarity (the
stale check's "newer:" neighbours) is not a question and keeps the plain vectors.

M is fitted by `benchmarks/learn_question_map.py`: for every answerable question of the labelled sets, its
vector as `query` embeds it and every vector of its synced store; M = I + A maximises the log-probability of
the question's answers under a softmax over the store's nodes by cosine (a temperature of 20), each against
the 200 nodes nearest to the plain question and its answers, with A pulled toward 0 by L2, by full-batch Adam
from the identity. Held out by set (five folds, 86 sets, 7,937 questions), the vectors alone rank the first
answer at MRR .417 with the plain question and .473 with the map (docs/evaluation.md, fifty-sixth wave).

It is kept as 256 x 256 float32 numbers, row by row, little-endian (QUESTION_MAP_FILE, 256 KB), read on first
use, and applied in plain Python (2-3 ms a question; a query never imports numpy for it). Only
vectors of the model it was learned for (builtin.WORDS) are mapped: another model's question keeps its
vector. `ranking.questionMap: false` in config.json turns it off.
"""

from __future__ import annotations

import array
import functools
import math
import operator
import struct
import sys
from pathlib import Path

from nexusmem.embed import builtin

QUESTION_MAP_FILE = Path(__file__).with_name("question_map.bin")
MODEL = builtin.WORDS


def applies(name: str, model: str, dim: int) -> bool:
    """Whether the map is made for vectors of this identity (the built-in model it was learned for)."""
    return name == "builtin" and model == MODEL and dim == builtin.DIM


@functools.cache
def rows() -> tuple[tuple[float, ...], ...]:
    """The map, row by row (read once a process: about 5 ms)."""
    data = QUESTION_MAP_FILE.read_bytes()
    dim = builtin.DIM
    if len(data) != 4 * dim * dim:
        raise ValueError(f"{QUESTION_MAP_FILE}: {len(data)} bytes, expected {4 * dim * dim}")
    numbers = array.array("f")
    numbers.frombytes(data)
    if sys.byteorder != "little":
        numbers.byteswap()
    values = numbers.tolist()
    return tuple(tuple(values[i * dim : (i + 1) * dim]) for i in range(dim))


def mapped(vector: bytes) -> bytes:
    """VECTOR (float32, little-endian, builtin.DIM numbers) through the map, normalised; VECTOR itself when
    the map leaves nothing of it."""
    dim = builtin.DIM
    v = struct.unpack(f"<{dim}f", vector)
    out = [sum(map(operator.mul, row, v)) for row in rows()]
    norm = math.sqrt(sum(x * x for x in out))
    if not norm or not math.isfinite(norm):
        return vector
    return struct.pack(f"<{dim}f", *(x / norm for x in out))
