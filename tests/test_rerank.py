"""Ranking's learned last step (nexusmem/retrieve/rerank.py): what it may move and what it must leave, on
nodes read back from a real store and on a real synced repository."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from nexusmem import config
from nexusmem import project as project_mod
from nexusmem.errors import ConfigError
from nexusmem.nodes import Node
from nexusmem.retrieve import query, rank, rerank
from nexusmem.retrieve.fuse import Evidence
from nexusmem.retrieve.question import prepare
from nexusmem.store import StoredNode
from nexusmem.store.db import open_store

from helpers import commit, run_cli
from helpers.nodes import commit_node, node, shell_node, store_nodes

DAY = 86_400_000
T0 = 1_700_000_000_000


def change(subject: str, lines: int) -> Node:
    """A commit of LINES added lines to one file, as a sync stores it: its body lists the file, its change
    words hold the names the lines use."""
    made = commit_node(T0, "src/loader.py", subject=subject, insertions=lines, deletions=0)
    body = f"{subject}\n\nFiles: src/loader.py (+{lines} -0)"
    return dataclasses.replace(made, body=body, words="load_config read_file path settings")


def alike(*nodes: StoredNode) -> dict[str, Evidence]:
    """What the retrieval lists said of NODES when they found them equally well: .3 of the best BM25 score and
    of the vector similarity above the floor each (little enough that no score reads as a rule's setback)."""
    return {n.id: Evidence(lexical=0.3, semantic=0.3) for n in nodes}


def half(ids: list[str]) -> dict[str, float]:
    """Half the question's IDF mass in the words of each node."""
    return dict.fromkeys(ids, 0.5)


def read_back(tmp_path: Path, nodes: list[Node]) -> list[StoredNode]:
    with open_store(tmp_path / "memory.db", create=True) as store:
        store_nodes(store, nodes)
        found = store.get_many([n.id for n in nodes], light=True)
    return [found[n.id] for n in nodes]


def lengths(tmp_path: Path, *nodes: StoredNode) -> dict[str, rerank.Sizes]:
    """The lengths of NODES' own text as the product passes them to the step (query.text_sizes), read from
    the store read_back wrote."""
    with open_store(tmp_path / "memory.db") as store:
        return query.text_sizes(store.get_many([n.id for n in nodes]))


def test_a_narrow_fix_goes_above_a_sweeping_change_it_ties_with(tmp_path: Path) -> None:
    sweep, fix = read_back(
        tmp_path,
        [change("Rework the config loader", 4_000), change("Fix the loader crash on an empty file", 6)],
    )
    scored = [(sweep, 1.0), (fix, 0.98)]
    found = alike(sweep, fix)
    sizes = lengths(tmp_path, sweep, fix)
    out = rerank.rerank(
        scored, rerank.conditions(failure=True, names_code=False, asks="neutral"), found, half, sizes=sizes
    )
    assert [n.title for n, _ in out] == ["Fix the loader crash on an empty file", "Rework the config loader"]
    # Each place keeps its score: what reads them (the packer, the weak-answer check) sees the same numbers.
    assert [s for _, s in out] == [1.0, 0.98]
    # A clear winner stays first: relevance weighs most.
    clear = {sweep.id: Evidence(lexical=1.0, semantic=0.6), fix.id: Evidence(lexical=0.2, semantic=0.3)}
    assert (
        rerank.rerank([(sweep, 1.0), (fix, 0.3)], ("always", "failure"), clear, half, sizes=sizes)[0][0].title
        == sweep.title
    )


def test_a_change_someone_reported_goes_above_one_it_ties_with(tmp_path: Path) -> None:
    """A subject that names an issue or pull request ("Fixes #339", "(#537)", "gh-12") is a change someone
    asked for or reported: at the same place in the list, it is worth more to the step than the same change
    without the number, for a question that reports a failure and for one that does not. A number that is no
    issue's (a version, a count) is not one. (Fitted over eighty-eight sets with the docs score, the number
    is worth less than a place in the list, so it no longer decides a tie on its own: docs/evaluation.md,
    sixtieth and sixty-first waves.)"""
    plain, reported, pr, gh, version = read_back(
        tmp_path,
        [
            change("Ignore node_modules when watching", 12),
            change("Ignore node_modules by default. Fixes #339", 12),
            change("fix: lazy load getRandomValues (#537)", 12),
            change("gh-12: ignore node_modules", 12),
            change("Ignore node_modules in 2.0.1", 12),
        ],
    )
    assert [rank.names_number(n.kind, n.title) for n in (plain, reported, pr, gh, version)] == [
        False,
        True,
        True,
        True,
        False,
    ]
    found = alike(plain, reported, pr, gh, version)
    sizes = lengths(tmp_path, plain, reported, pr, gh, version)
    numbered = rerank.FEATURES.index("numbered")
    for failure in (True, False):
        for asks in ("neutral", "usage"):
            met = rerank.conditions(failure=failure, names_code=False, asks=asks)
            for listed in ([plain, reported], [version, pr]):
                x, _ = rerank.head_features(
                    [(n, 1.0) for n in listed], found, half, rank.DEFAULT, asks, sizes=sizes
                )
                unnumbered = [*x[1][:numbered], 0.0, *x[1][numbered + 1 :]]
                assert x[0][numbered] == 0.0 and x[1][numbered] == 1.0
                with_number, without = rerank.values([x[1], unnumbered], met)
                assert with_number > without + 0.1, (failure, asks, listed[1].title)
    # A clear winner stays first.
    clear = {plain.id: Evidence(lexical=1.0, semantic=0.6), reported.id: Evidence(lexical=0.3, semantic=0.3)}
    met = rerank.conditions(failure=True, names_code=False, asks="neutral")
    assert (
        rerank.rerank([(plain, 1.0), (reported, 0.5)], met, clear, half, sizes=sizes)[0][0].title
        == plain.title
    )


def test_the_operating_systems_a_text_names() -> None:
    from nexusmem.retrieve.intent import platforms_named

    assert platforms_named("On my Mac it works, on Ubuntu 22.04 it hangs") == {"macos", "linux"}
    assert platforms_named("Files: backend_kqueue.go (+3 -1)") == {"bsd", "macos"}
    assert platforms_named("Fix crash on WIN32 when the path is long") == {"windows"}
    assert platforms_named("the window closes when I resize it") == frozenset()
    assert platforms_named("the MAC address is printed twice; an Alpine.js form loses it") == frozenset()
    assert platforms_named("on my Mac the address is printed twice; Alpine builds are fine") == {
        "macos",
        "linux",
    }
    assert prepare("Why does the watcher panic on Windows?").platforms == {"windows"}


def test_a_change_about_the_system_the_question_names_goes_above_one_it_ties_with(tmp_path: Path) -> None:
    """A question that names an operating system ("on Windows the watcher panics") is answered by a change to
    that system's code more often than by one that says the same words about another's: between two changes
    the lists found equally, the one about the named system goes first. A commit is about a system by its
    message or the files it changed, a diff by its path, a section by its title."""
    windows, linux, diff, section, other = read_back(
        tmp_path,
        [
            node(
                "git_commit",
                text="Fix crash when a file name is very long",
                body="Fix crash when a file name is very long\n\nFiles: watcher_windows.go (+11 -2)",
                meta={"insertions": 11, "deletions": 2},
            ),
            node(
                "git_commit",
                text="Fix crash when a file name is very long",
                body="Fix crash when a file name is very long\n\nFiles: backend_inotify.go (+9 -1)",
                meta={"insertions": 9, "deletions": 1},
            ),
            node("code_diff", text="internal/watcher_windows.go @ 1a2b3c4 — Handle long names"),
            node("doc_section", text="Windows notes"),
            node("doc_section", text="Long file names"),
        ],
    )
    head = [(n, 1.0) for n in (windows, linux, diff, section, other)]
    with open_store(tmp_path / "memory.db") as store:
        whole = store.get_many([n.id for n, _ in head])
    assert query.on_platform(whole, frozenset({"windows"}), head) == {windows.id, diff.id, section.id}
    assert query.on_platform(whole, frozenset({"linux"}), head) == {linux.id}
    assert query.on_platform(whole, frozenset(), head) == frozenset()
    met = rerank.conditions(failure=True, names_code=False, asks="neutral")
    scored = [(linux, 1.0), (windows, 0.99)]
    found = alike(linux, windows)
    sizes = lengths(tmp_path, linux, windows)

    def order(
        listed: list[tuple[StoredNode, float]], about: set[str], said: dict[str, Evidence]
    ) -> list[str]:
        return [n.id for n, _ in rerank.rerank(listed, met, said, half, on_platform=about, sizes=sizes)]

    assert order(scored, {windows.id}, found) == [windows.id, linux.id]
    assert order(scored, {linux.id}, found) == [linux.id, windows.id]
    # A clear winner stays first.
    clear = {linux.id: Evidence(lexical=1.0, semantic=0.6), windows.id: Evidence(lexical=0.3, semantic=0.3)}
    assert order([(linux, 1.0), (windows, 0.5)], {windows.id}, clear)[0] == linux.id


def test_the_step_reads_the_lengths_of_a_nodes_own_text(tmp_path: Path) -> None:
    """Ranking reads nodes light (no body, no change words); the step's length features are read from the
    store for the nodes it may move: the words of the body, of the change words and of the title, and the
    files a commit's body lists. A one-line commit of one file and a long one of many are told apart."""
    short, long, diff, section, command = read_back(
        tmp_path,
        [
            node(
                "git_commit",
                text="Fix the parser",
                body="Fix the parser\n\nFiles: src/parser.py (+1 -1)",
                words="parse_attr empty",
            ),
            node(
                "git_commit",
                text="Rework how the loader reads its config",
                body="Rework how the loader reads its config\n\nIt now reads the file once and keeps it.\n\n"
                "Files: a.py (+40 -2), b.py (+0 -0), docs/c.md (+3 -3)",
                words="load_config read_once cache keep",
            ),
            node(
                "code_diff",
                text="src/parser.py @ 1a2b3c4 — Fix the parser",
                body="@@ -1 +1 @@\n-a = 1\n+a = 2",
            ),
            node("doc_section", text="Loading the config", body="Call load_config() once at start."),
            shell_node("pytest -x", T0),
        ],
    )
    assert not short.body and not short.words  # read light, as ranking reads them
    head = [(n, 1.0) for n in (short, long, diff, section, command)]
    with open_store(tmp_path / "memory.db") as store:
        reads = query.step_reads(store, prepare("why does the parser fail?"), ["parser", "fail"], head)
    sizes = reads.sizes
    assert sizes == {
        short.id: (7, 2, 3, 1),
        long.id: (26, 4, 7, 3),
        diff.id: (10, 0, 7, 0),
        section.id: (5, 0, 3, 0),
    }
    x, _ = rerank.head_features(head[:2], alike(short, long), half, rank.DEFAULT, "neutral", sizes=sizes)
    at = rerank.FEATURES.index("files")
    assert x[0][at] == pytest.approx(math.log(2)) and x[1][at] == pytest.approx(math.log(4))
    # The same two rows without their lengths: the step weighs them.
    bare, _ = rerank.head_features(head[:2], alike(short, long), half, rank.DEFAULT, "neutral")
    met = rerank.conditions(failure=True, names_code=False, asks="neutral")
    assert rerank.values(x, met) != rerank.values(bare, met)


def test_a_change_whose_message_says_what_the_question_means_goes_above_one_it_ties_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Users say "folder", commits "directory" (the learned kin, thesaurus.kin_strengths): between two changes
    the lists found equally, the one whose message holds the question's kin goes first, in its title or
    only in its body; a word the question says itself is not its own kin."""
    from nexusmem.retrieve import thesaurus

    kin_file = tmp_path / "kin.txt"
    kin_file.write_text("folder directory:50 dir:20\nrenamed moved:9\n", encoding="utf-8")
    monkeypatch.setattr(thesaurus, "LEARNED_KIN_FILE", kin_file)
    thesaurus.learned_kin.cache_clear()
    try:
        titled, bodied, plain, section = read_back(
            tmp_path,
            [
                node("git_commit", text="Keep the watch when a directory is renamed", meta={"insertions": 8}),
                node(
                    "git_commit",
                    text="Fix #214",
                    body="Fix #214\n\nThe watch was dropped when its dir moved.",
                    meta={"insertions": 8},
                ),
                node("git_commit", text="Keep the watch when a file is renamed", meta={"insertions": 8}),
                node("doc_section", text="Watching a directory"),
            ],
        )
        strengths = thesaurus.kin_strengths(["folder", "renamed", "watch"])
        assert strengths == {"directory": 50.0, "dir": 20.0, "moved": 9.0}
        assert thesaurus.kin_strengths(["folder", "directory"]) == {"dir": 20.0}
        head = [(n, 1.0) for n in (titled, bodied, plain, section)]
        with open_store(tmp_path / "memory.db") as store:
            whole = store.get_many([n.id for n, _ in head])
        held = query.kin_held(whole, strengths, head)
        assert query.kin_held(whole, {}, head) == {}
        assert held == {titled.id: 50.0, bodied.id: 29.0, section.id: 50.0}
    finally:
        thesaurus.learned_kin.cache_clear()
    met = rerank.conditions(failure=True, names_code=False, asks="neutral")
    scored = [(plain, 1.0), (titled, 0.99)]
    found = alike(plain, titled)
    sizes = lengths(tmp_path, plain, titled)

    def order(kin: dict[str, float]) -> list[str]:
        return [n.id for n, _ in rerank.rerank(scored, met, found, half, kin=kin, sizes=sizes)]

    assert order({titled.id: 50.0}) == [titled.id, plain.id]
    assert order({plain.id: 50.0}) == [plain.id, titled.id]


def test_a_doc_section_goes_above_a_change_it_ties_with_when_the_question_reads_as_the_docs(
    tmp_path: Path,
) -> None:
    """How likely the question's answer is a doc section (asks_docs.score, learned from the labelled
    questions) weighs for the sections the step may move. Between a section and a change the lists found
    as well, "if two stubs match the same URL, which response do I get?" keeps the section first; a report
    of what broke puts the change first, where a question read as neither would have left the section
    there; a change's own features do not depend on it."""
    from nexusmem.retrieve import asks_docs, intent

    commit, section = read_back(
        tmp_path,
        [
            change("Match stubs declared later first", 12),
            node("doc_section", text="Precedence of stubs", ts=T0),
        ],
    )
    found = alike(commit, section)
    sizes = lengths(tmp_path, commit, section)

    def natural(n: StoredNode) -> float:
        """The score the rules give N for what the lists said (no rule set it back or lifted it)."""
        ruled = rerank.ruling(n, 1.0, found[n.id], rank.DEFAULT, "neutral")
        assert ruled is not None
        return 1.0 / ruled

    def first(question: str, docs: float) -> str:
        met = rerank.conditions(
            intent.reports_failure(question), intent.names_code(question), intent.intent(question)
        )
        scored = [(commit, natural(commit)), (section, natural(section))]
        out = rerank.rerank(
            scored, met, found, half, rank.DEFAULT, intent.intent(question), asks_docs=docs, sizes=sizes
        )
        return out[0][0].kind

    docs = "If I declare two stubs that match the same URL, which response will I get back?"
    report = "Since upgrading, two stubs for the same URL crash with a NoMethodError. Was that fixed?"
    assert asks_docs.score(docs) > 1.0 and asks_docs.score(report) < -1.0
    assert first(docs, asks_docs.score(docs)) == "doc_section"
    assert first(docs, -3.0) == "git_commit"
    assert first(report, asks_docs.score(report)) == "git_commit"
    assert first(report, 0.0) == "doc_section"
    x, _ = rerank.head_features([(commit, 1.0), (section, 0.99)], found, half, rank.DEFAULT, "neutral")
    y, _ = rerank.head_features(
        [(commit, 1.0), (section, 0.99)], found, half, rank.DEFAULT, "neutral", asks_docs=3.0
    )
    at = rerank.FEATURES.index("asks_docs")
    assert x[0] == y[0] and x[1][at] == 0.0 and y[1][at] == 3.0


def test_other_kinds_keep_their_places_and_the_tail_is_untouched(tmp_path: Path) -> None:
    nodes = [
        shell_node("pytest tests/test_loader.py", T0),
        change("Rework the config loader", 4_000),
        change("Fix the loader crash on an empty file", 6),
        shell_node("make lint", T0 + 1),
        *[node("doc_section", text=f"loader section {i}", ts=T0) for i in range(rerank.DEPTH + 2)],
    ]
    stored = read_back(tmp_path, nodes)
    scored = [(n, 1.0 - i / 100) for i, n in enumerate(stored)]
    out = rerank.rerank(scored, ("always", "failure"), alike(*stored), half, sizes=lengths(tmp_path, *stored))
    assert out[0][0].id == stored[0].id and out[3][0].id == stored[3].id
    commits = [n.title for n, _ in out if n.kind == "git_commit"]
    assert commits == ["Fix the loader crash on an empty file", "Rework the config loader"]
    assert out[rerank.DEPTH :] == scored[rerank.DEPTH :]
    assert [s for _, s in out] == [s for _, s in scored]
    assert sorted(n.id for n, _ in out) == sorted(n.id for n in stored)


def test_what_the_lists_said_counts_and_a_rules_setback_counts_with_it(tmp_path: Path) -> None:
    """Two changes the rules left almost tied: the one that holds more of the question's words goes first;
    but when a rule set it back (a test-only change, a blog post: its score is a fraction of its relevance),
    what the lists said of it is set back too, and the other stays first."""
    broad, narrow = read_back(
        tmp_path, [change("Rework the config loader", 40), change("Handle an empty config file", 40)]
    )
    prior = rank.kind_prior(broad.signal, "git_commit", broad.source, "neutral", fix=False, post=False)
    evidence = {broad.id: Evidence(lexical=1.0), narrow.id: Evidence(lexical=0.95)}
    covered = {broad.id: 0.3, narrow.id: 0.9}
    sizes = lengths(tmp_path, broad, narrow)
    met = rerank.conditions(failure=False, names_code=False, asks="neutral")

    def order(narrow_factor: float, covered: dict[str, float]) -> list[str]:
        scored = [(broad, 1.0 * prior), (narrow, 0.95 * prior * narrow_factor)]
        scored.sort(key=lambda pair: -pair[1])
        return [n.title for n, _ in rerank.rerank(scored, met, evidence, lambda ids: covered, sizes=sizes)]

    assert order(1.0, covered) == ["Handle an empty config file", "Rework the config loader"]
    assert order(1.0, dict.fromkeys(covered, 0.3)) == [
        "Rework the config loader",
        "Handle an empty config file",
    ]
    assert order(0.5, covered) == ["Rework the config loader", "Handle an empty config file"]


def test_every_weight_row_is_complete() -> None:
    assert set(rerank.WEIGHTS) == set(rerank.CONDITIONS)
    assert all(len(row) == len(rerank.FEATURES) for row in rerank.WEIGHTS.values())
    assert all(len(unit) == 2 + len(rerank.FEATURES) + len(rerank.CONDITIONS) for unit in rerank.HIDDEN)
    # The lengths are weighed by w alone: no hidden unit reads them.
    assert rerank.LINEAR and all(
        unit[2 + rerank.FEATURES.index(f)] == 0.0 for f in rerank.LINEAR for unit in rerank.HIDDEN
    )
    assert rerank.conditions(True, True, "usage") == ("always", "failure", "names_code", "usage")


@pytest.fixture
def loader_repo(repo: Path) -> Path:
    commit(repo, "Add the config loader", {"loader.py": "def load(path):\n    return open(path).read()\n"})
    commit(
        repo,
        "Rework the config loader into sections",
        {"loader.py": "\n".join(f"x{i} = {i}" for i in range(300))},
    )
    commit(repo, "Fix the loader crash on an empty config file", {"loader.py": "EMPTY = ''\n"})
    commit(
        repo,
        "docs: how the loader reads sections",
        {"LOADER.md": "# Loader\n\nSections are read in order.\n"},
    )
    run_cli("-C", str(repo), "sync", "--no-embed")
    return repo


def test_a_rule_that_pins_its_answer_is_not_overruled(loader_repo: Path) -> None:
    off = rank.Settings(rerank=False)
    with project_mod.load(loader_repo).open_store(readonly=True) as store:
        cued = "what changed in the config loader yesterday"
        on_cue, off_cue = query.retrieve(store, cued), query.retrieve(store, cued, settings=off)
        assert not on_cue.rerankable
        assert [n.id for n, _ in on_cue.scored] == [n.id for n, _ in off_cue.scored]
        plain = query.retrieve(store, "the config loader crashes on an empty file")
        assert plain.rerankable


def test_ranking_rerank_is_a_validated_setting(tmp_path: Path) -> None:
    assert config.DEFAULTS["ranking"]["rerank"] is True and rank.DEFAULT.rerank
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"ranking": {"rerank": False}}), encoding="utf-8")
    assert rank.settings_from(config.load(path)).rerank is False
    path.write_text(json.dumps({"ranking": {"rerank": "no"}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="rerank"):
        config.load(path)


def test_the_nearest_by_vector_below_the_window_join_it(tmp_path: Path) -> None:
    """What the step orders (rerank.window): the first DEPTH, then those of the first RECRUITS of the nearest
    by vector that rank below them, of the kinds it moves (not a shell command), in their order; the rest
    keeps its order."""
    docs = [node("doc_section", text=f"loader section {i}", ts=T0) for i in range(rerank.DEPTH + 20)]
    stored = read_back(
        tmp_path, [*docs, change("Fix the loader crash on an empty file", 6), shell_node("pytest", T0)]
    )
    scored = [(n, 1.0 - i / 100) for i, n in enumerate(stored)]
    fix, command, doc = stored[-2], stored[-1], stored[rerank.DEPTH + 5]
    nearest = (
        command.id,
        *[n.id for n in stored[: rerank.RECRUITS - 2]],  # already among the first DEPTH
        fix.id,
        doc.id,  # past the first RECRUITS of the nearest
    )
    head, rest = rerank.window(scored, nearest)
    assert [n.id for n, _ in head] == [n.id for n in stored[: rerank.DEPTH]] + [fix.id]
    assert [n.id for n, _ in rest] == [n.id for n in stored[rerank.DEPTH : -2]] + [command.id]
    assert rerank.window(scored) == (scored[: rerank.DEPTH], scored[rerank.DEPTH :])


def test_a_fix_nearest_by_vector_far_down_the_list_can_come_first(tmp_path: Path) -> None:
    """A change that says in other words what the user reports ("Fix the loader crash on an empty file" for
    "it dies when the file is blank") is nearest by vector while pages that share the question's common words
    fill the first DEPTH: taken in from below, the step puts it first. Every node keeps a score no higher
    than the one before it: the list stays in order for the packer and the weak-match check."""
    docs = [node("doc_section", text=f"loader section {i}", ts=T0) for i in range(rerank.DEPTH + 20)]
    stored = read_back(tmp_path, [*docs, change("Fix the loader crash on an empty file", 6)])
    fix = stored[-1]
    evidence = {n.id: Evidence(lexical=1.0 - i / 1000) for i, n in enumerate(stored)}
    evidence[fix.id] = Evidence(semantic=0.8, cosine=0.8)

    def as_ranked(n: StoredNode) -> float:  # relevance times the kind's prior: what no rule changed
        prior = rank.kind_prior(
            n.signal, n.kind, n.source, "neutral", fix=rank.says_fix(n.kind, n.title), post=False
        )
        return rank.relevance(evidence[n.id], rank.DEFAULT) * prior

    scored = sorted(((n, as_ranked(n)) for n in stored), key=lambda pair: -pair[1])
    assert scored[-1][0].id == fix.id
    covering = lambda ids: dict.fromkeys(ids, 0.2)  # noqa: E731
    alone = rerank.rerank(scored, ("always", "failure"), evidence, covering)
    assert alone[-1][0].id == fix.id  # below the window, the step never sees it
    out = rerank.rerank(scored, ("always", "failure"), evidence, covering, nearest=(fix.id,))
    assert out[0][0].id == fix.id
    assert sorted(n.id for n, _ in out) == sorted(n.id for n in stored)
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
