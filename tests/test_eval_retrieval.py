"""The labelled retrieval evaluation (benchmarks/eval_retrieval.py) at its small size: hybrid must beat
BM25-only on MRR, and the labels must stay honest (paraphrases share at most one word with their answer)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "eval_retrieval.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eval_retrieval", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_query_set_is_large_and_half_paraphrase() -> None:
    ev = load_script()
    queries = ev.load_queries()
    assert len(queries) >= 40
    assert sum(q.type == "paraphrase" for q in queries) * 2 >= len(queries)
    assert {q.type for q in queries} == {"lexical", "paraphrase"}


@pytest.mark.slow
def test_hybrid_beats_bm25_on_the_labelled_set(tmp_path: Path) -> None:
    ev = load_script()
    # NEXUSMEM_HOME and HOME already point at temp dirs (tests/conftest.py): the planted shell log lands there.
    report = ev.run_eval(tmp_path, commits=1500, shell_lines=5000, seed=7)
    print()
    print(report.table())
    leaks = [(g.query.text, g.shared_words) for g in report.graded if g.query.type == "paraphrase"]
    assert all(len(words) <= 1 for _, words in leaks), [leak for leak in leaks if len(leak[1]) > 1]
    bm25, hybrid = report.metrics("bm25"), report.metrics("hybrid")
    assert hybrid["mrr"] > bm25["mrr"], report.table()
    # Exact words must keep working: every lexical query finds its answer in the top 5 either way.
    assert report.metrics("bm25", "lexical")["r5"] == 1.0
    assert report.metrics("hybrid", "lexical")["r5"] == 1.0
