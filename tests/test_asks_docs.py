"""The learned reading of whether a question's answer is in the docs (retrieve.asks_docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusmem.retrieve import asks_docs


def test_features_are_the_words_their_pairs_and_what_intent_reads() -> None:
    found = asks_docs.features("How do I configure the Proxy? It crashes with KeyError")
    assert {"how", "do", "configure", "proxy", "how_do", "the_proxy", "it_crashes"} <= found
    assert {"@usage", "@failure", "@code"} <= found  # "how do I", "crashes", KeyError
    assert "@history" not in found
    assert "@history" in asks_docs.features("When was the proxy option added?")
    assert "i" not in found  # one letter is no word


def test_the_score_sums_a_tables_weights_within_its_limit() -> None:
    table = asks_docs.parse("@bias -0.5\nconfigure 1.25\nbroken line\nhow_do 2\n\ncrash -9\n")
    assert table == {"@bias": -0.5, "configure": 1.25, "how_do": 2.0, "crash": -9.0}
    assert asks_docs.score("how do I configure it", table) == pytest.approx(2.75)
    assert asks_docs.score("nothing it knows", table) == -0.5
    assert asks_docs.score("a crash", table) == -asks_docs.LIMIT
    assert asks_docs.parse(asks_docs.dump(table)) == table
    assert asks_docs.dump(table).splitlines()[0] == "@bias -0.5"
    # The shipped table is looked up by bisection over its sorted lines, not parsed whole: the same weights,
    # whatever the lines' order, a malformed line still none.
    text = "how_do 2\nbroken line\n@bias -0.5\ncrash -9\nconfigure 1.25\nconfigured x\n"
    looked_up = asks_docs.Sorted(text)
    assert dict(looked_up) == table and len(looked_up) == 6
    assert looked_up.get("configured") is None and looked_up.get("configur") is None
    assert asks_docs.score("how do I configure it", looked_up) == pytest.approx(2.75)


def test_an_unreadable_table_reads_every_question_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asks_docs, "LEARNED_FILE", tmp_path / "missing.txt")
    asks_docs.learned.cache_clear()
    try:
        assert asks_docs.score("How do I configure the proxy?") == 0.0
    finally:
        asks_docs.learned.cache_clear()


def test_the_shipped_table_tells_a_how_to_from_a_report_of_a_change() -> None:
    """What the learned table says of questions no labelled set holds: a how-to or a what-does-it-build-on is
    the docs', a report of what broke after an upgrade or a question about a commit is history's."""
    docs = [
        "How can I run my own code before every request is sent?",
        "Which terminal library does this build on, and can I swap it for another?",
        "I want the output sorted by size; is there a setting for that?",
    ]
    history = [
        "Since upgrading to 2.3 the parser crashes with IndexError on an empty line. Why?",
        "Which commit removed the --legacy flag?",
        "My app segfaults when the config file is empty; was that ever fixed?",
    ]
    assert min(asks_docs.score(q) for q in docs) > 0.0
    assert max(asks_docs.score(q) for q in history) < 0.0
