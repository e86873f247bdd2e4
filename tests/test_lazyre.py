"""Patterns compiled on first use (nexusmem.lazyre): they answer as re's do, and a cold query compiles only
the patterns its question reaches."""

from __future__ import annotations

import re
import subprocess
import sys

from nexusmem import lazyre


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    source = r"(?P<word>[a-z]+)(\d*)"
    text = "Fix cache2 and parser, then retry3"
    for flags in (0, re.IGNORECASE):
        lazy, compiled = lazyre.compile(source, flags), re.compile(source, flags)
        assert lazy.pattern == source
        assert lazy.findall(text) == compiled.findall(text)
        assert [m.span() for m in lazy.finditer(text, 4)] == [m.span() for m in compiled.finditer(text, 4)]
        assert lazy.sub(lambda m: m["word"].upper(), text, 2) == compiled.sub(
            lambda m: m["word"].upper(), text, 2
        )
        assert lazy.subn("w", text) == compiled.subn("w", text)
        assert lazy.split(text, 1) == compiled.split(text, 1)
        for method in ("search", "match", "fullmatch"):
            got, want = getattr(lazy, method)(text, 4, 9), getattr(compiled, method)(text, 4, 9)
            assert (got and got.span()) == (want and want.span()), method


def test_once_compiled_its_calls_are_the_compiled_patterns_own() -> None:
    """A pattern in a loop (a question read against thousands of commands) costs what a compiled one does."""
    lazy = lazyre.compile(r"\bfail(?:s|ed|ing)?\b")
    assert lazy.search("the build failed") is not None
    compiled = lazy.compiled()
    assert compiled is lazy.compiled()  # compiled once
    for method in ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"):
        bound = getattr(lazy, method)
        assert bound.__self__ is compiled and bound.__name__ == method


def test_importing_the_question_readers_compiles_none_of_their_patterns() -> None:
    """retrieve.intent and the rules that read a question (retrieve.query, .question, .history, .recent,
    .answer) hold a pattern for each kind of question; a cold `nexusmem query` imports them all and compiles
    only those its question uses (README: the cold query's figure)."""
    code = (
        "import re, sys\n"
        "from nexusmem import lazyre\n"
        "from nexusmem.retrieve import activity, answer, history, intent, order, query, question, recent, runs, worktime\n"
        "readers = (activity, answer, history, intent, order, query, question, recent, runs, worktime)\n"
        "def patterns(kind):\n"
        "    return [v for m in readers for v in vars(m).values() if isinstance(v, kind)]\n"
        "lazy = patterns(lazyre.Pattern)\n"
        "print(len(lazy), sum(p._compiled is not None for p in lazy), len(patterns(re.Pattern)))\n"
        "intent.intent('why does the cache test fail on windows since yesterday?')\n"
        "print(sum(p._compiled is not None for p in lazy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    first, after = out.splitlines()
    held, compiled_at_import, eager = map(int, first.split())
    assert held > 50 and compiled_at_import == 0
    assert eager == 0, "a module-level re.compile in a question reader: use lazyre.compile"
    assert 0 < int(after) < held // 2
