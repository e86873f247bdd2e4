"""Failure → fix linking measured on a generated history with planted fixes and planted decoys.

Deterministic (fixed seed). Every scenario is placed at a random time in a 90-day span with its own command
text, files and vocabulary, interleaved with noise (successful everyday commands, unrelated commits and
conversation turns, failures nothing fixed). The planted truth is the set of links the rules should find;
each decoy category is built to tempt one rule and must produce no link at all.

This is a regression harness for the rules as specified, not a measure of how often the rules are right on
real histories: there the truth is unknown, and a retry that merely passed by luck still counts as "fix".
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import pytest

from nexusmem.link import DAY_MS, link_failures
from nexusmem.nodes import Node
from nexusmem.store import Store, open_store

from helpers import commit_node, shell_node, turn_node
from helpers.nodes import conversation_turn

SEED = 20261130
START = 1_750_000_000_000
SPAN = 90 * DAY_MS
MINUTE = 60_000
HOUR = 60 * MINUTE
WORDS = [
    "quartz", "ember", "falcon", "lumen", "orbit", "pylon", "raven", "sable", "tundra", "vortex",
    "willow", "zephyr", "cobalt", "delta", "garnet", "harbor", "indigo", "juniper", "kestrel", "mosaic",
]  # fmt: skip

# Planted fixes: (category, how many).
PLANTED = {
    "retry": 40,
    "commit": 30,
    "commit+retry": 15,
    "commit after the passing retry": 15,
    "the code its test tests": 15,
    "failed again before the commit": 10,
    "flaky pass, later work": 10,
    "discussion": 20,
    "the turn it ran in": 20,
    "its session's next turn": 10,
    "the fix among a rebase's commits": 10,
}
# Decoys: each must add no link beyond the planted ones.
DECOYS = {
    "same command, other cwd": 25,
    "success after 25 h": 25,
    "other command sharing words": 25,
    "commit touching an unrelated file": 25,
    "commit before the failure": 25,
    "a same-named file, not a test": 15,
    "a tested name two packages share": 10,
    "another service's file of the tested name": 10,
    "turn missing one word": 20,
    "turn 25 h away": 20,
    "only generic words": 10,
    "another session naming its one word": 20,
    "its own session, never about it": 10,
    "never fixed": 30,
    "commit, then the same command failed again": 15,
    "a commit the failing line made itself": 15,
}


@dataclass
class History:
    nodes: list[Node] = field(default_factory=list)
    truth: set[tuple[str, str, str]] = field(default_factory=set)
    # failure id → category, for per-category counts of what was linked
    category: dict[str, str] = field(default_factory=dict)


_serial = count()


def _shell(
    command: str,
    ts: int,
    exit_code: int,
    cwd: str = ".",
    files: tuple[str, ...] = (),
    session: str = "s1",
    **meta: object,
) -> Node:
    key = f"s{next(_serial)}\x1f{ts}\x1f{command}"
    return shell_node(
        command, ts, exit_code, cwd=cwd, files=files, session=session, project="eval", key=key, **meta
    )


def _commit(ts: int, *files: str, **meta: object) -> Node:
    sha = f"{next(_serial):040x}"
    return commit_node(ts, *files, subject="fix: adjust things", project="eval", sha=sha, **meta)


def _turn(ts: int, text: str) -> Node:
    key = f"t{next(_serial)}"
    return turn_node(ts, text, project="eval", key=key, ref=f"turn {next(_serial)}", title_chars=60)


def _agent_turn(
    session: str, turn: int, ts: int, question: str, answer: str, ran: tuple[str, ...] = ()
) -> Node:
    """A turn of an agent's session, listing the commands it ran as the conversation source does."""
    listed = "\n\nCommands run:\n" + "\n".join(f"$ {command}" for command in ran) if ran else ""
    return conversation_turn(session, turn, question, answer + listed, ts=ts, project="eval")


def build_history(seed: int = SEED) -> History:
    global _serial
    _serial = count()  # node ids depend only on the seed, not on what was built before
    rng = random.Random(seed)
    h = History()
    n = count()

    def when() -> int:
        return START + rng.randrange(SPAN)

    def fail(category: str, command: str, ts: int, **kw: object) -> Node:
        # 124 is timeout(1)'s; 130 (Ctrl-C) would be a command the person stopped, which is not a failure.
        node = _shell(command, ts, rng.choice([1, 1, 2, 127, 124]), **kw)  # type: ignore[arg-type]
        h.nodes.append(node)
        h.category[node.id] = category
        return node

    def plant(failure: Node, fix: Node, relation: str) -> None:
        h.nodes.append(fix)
        h.truth.add((failure.id, fix.id, relation))

    for _ in range(PLANTED["retry"]):
        i, t = next(n), when()
        f = fail("retry", f"pytest tests/test_mod{i}.py -q", t)
        spaced = f"pytest  tests/test_mod{i}.py   -q " if rng.random() < 0.3 else f.ref
        plant(f, _shell(spaced, t + rng.randrange(MINUTE, 23 * HOUR), 0), "retry")
        if rng.random() < 0.5:  # a second success later: the first one is the retry
            h.nodes.append(_shell(f.ref, t + 23 * HOUR + rng.randrange(HOUR), 0))
    for _ in range(PLANTED["commit"]):
        i, t = next(n), when()
        path = f"src/pkg{i}/mod.py"
        f = fail("commit", f"ruff check {path}", t, files=(path,))
        plant(f, _commit(t + rng.randrange(MINUTE, 23 * HOUR), path, f"src/pkg{i}/other.py"), "commit")
    for _ in range(PLANTED["commit+retry"]):
        i, t = next(n), when()
        path = f"lib/unit{i}.py"
        f = fail("commit+retry", f"mypy {path}", t, files=(path,))
        plant(f, _commit(t + rng.randrange(MINUTE, 2 * HOUR), path), "commit")
        plant(f, _shell(f.ref, t + 2 * HOUR + rng.randrange(MINUTE, HOUR), 0, files=(path,)), "retry")
    for _ in range(PLANTED["commit after the passing retry"]):
        # The everyday flow: it fails, the file is edited, it passes, the edit is committed.
        i, t = next(n), when()
        path = f"conf/site{i}.toml"
        f = fail("commit after the passing retry", f"validate {path}", t, files=(path,))
        plant(f, _shell(f.ref, t + HOUR, 0, files=(path,)), "retry")
        plant(f, _commit(t + 2 * HOUR, path), "commit")
    for _ in range(PLANTED["the code its test tests"]):
        i, t = next(n), when()
        test = rng.choice([f"tests/test_widget{i}.py", f"pkg/widget{i}_test.go", f"web/widget{i}.test.ts"])
        code = {"py": f"src/app/widget{i}.py", "go": f"pkg/widget{i}.go", "ts": f"web/widget{i}.tsx"}
        f = fail("the code its test tests", f"run-tests {test}", t, files=(test,))
        plant(f, _shell(f.ref, t + 30 * MINUTE, 0, files=(test,)), "retry")
        plant(f, _commit(t + HOUR, code[test.rsplit(".", 1)[-1]]), "commit")
    for _ in range(PLANTED["failed again before the commit"]):
        # Failed, passed, failed again, then a commit: the commit answers the second failure only.
        i, t = next(n), when()
        path = f"conf/zone{i}.toml"
        first = fail("failed again before the commit", f"lint-zone {path}", t, files=(path,))
        plant(first, _shell(first.ref, t + HOUR, 0, files=(path,)), "retry")
        again = fail("failed again before the commit", first.ref, t + 2 * HOUR, files=(path,))
        plant(again, _commit(t + 3 * HOUR, path), "commit")
    for _ in range(PLANTED["flaky pass, later work"]):
        # It failed, passed a minute later with nothing changed; hours later a change to the same file.
        i, t = next(n), when()
        path = f"src/store{i}.py"
        f = fail("flaky pass, later work", f"pytest tests/test_store{i}.py", t, files=(path,))
        plant(f, _shell(f.ref, t + MINUTE, 0, files=(path,)), "retry")
        h.nodes.append(_commit(t + 3 * HOUR, path))
    for _ in range(PLANTED["discussion"]):
        i, t = next(n), when()
        a, b = rng.sample(WORDS, 2)
        f = fail("discussion", f"npm run deploy-{a}{i} --target {b}{i}", t)
        talk = f"deploy-{a}{i} fails for target {b}{i}: the {a}{i} bundle is missing, rebuild it first"
        plant(f, _turn(t + rng.choice([-1, 1]) * rng.randrange(MINUTE, 23 * HOUR), talk), "discussion")
    for _ in range(PLANTED["the fix among a rebase's commits"]):
        # A rebase replays the branch in one second: the feature and its test (authored before the failure)
        # are made in the second the fix (authored after it) is: the fix is the one authored after.
        i, t = next(n), when()
        path = f"src/price{i}.py"
        f = fail("the fix among a rebase's commits", f"ruff check {path}", t, files=(path,))
        rebased = t + HOUR + rng.randrange(HOUR) // 1000 * 1000
        h.nodes.append(_commit(t - 2 * HOUR, path, committed=rebased))
        h.nodes.append(_commit(t - HOUR, path, f"tests/test_price{i}.py", committed=rebased))
        plant(f, _commit(t + 10 * MINUTE, path, committed=rebased), "commit")

    for _ in range(PLANTED["the turn it ran in"]):
        # An agent's failing call, in the turn that asked about it; an hour later another session's short
        # turn names the same words (full-text ranking preferred it): the turn it ran in is its discussion.
        i, t = next(n), when()
        a = rng.choice(WORDS)
        sid = f"agent-ran-{i}"
        f = fail("the turn it ran in", f"pytest tests/test_{a}{i}.py -x", t, session=sid)
        ask = f"why does test_{a}{i} fail since the refactor?"
        why = f"The {a}{i} fixture keeps state between tests; I reset it in conftest."
        plant(f, _agent_turn(sid, 0, t - MINUTE, ask, why, ran=(f"{f.ref} (exit 1)",)), "discussion")
        h.nodes.append(_agent_turn(f"other-{i}", 0, t + HOUR, f"pytest tests/test_{a}{i}.py", "ok"))
    for _ in range(PLANTED["its session's next turn"]):
        # The turn it ran in says nothing of it; the person's next question is about the failure.
        i, t = next(n), when()
        a = rng.choice(WORDS)
        sid = f"agent-next-{i}"
        f = fail("its session's next turn", f"make lint-{a}{i}", t, session=sid)
        h.nodes.append(
            _agent_turn(
                sid,
                0,
                t - MINUTE,
                "run the checks before the release",
                "Running them now.",
                ran=(f"{f.ref} (exit 2)",),
            )
        )
        reply = _agent_turn(
            sid, 1, t + 10 * MINUTE, f"lint-{a}{i} failed, what is wrong?", f"The {a}{i} rules reject tabs."
        )
        plant(f, reply, "discussion")

    for _ in range(DECOYS["same command, other cwd"]):
        i, t = next(n), when()
        fail("same command, other cwd", f"cargo test -p crate{i}", t, cwd="crates/a")
        h.nodes.append(_shell(f"cargo test -p crate{i}", t + HOUR, 0, cwd="crates/b"))
    for _ in range(DECOYS["success after 25 h"]):
        i, t = next(n), when()
        fail("success after 25 h", f"make check-{i}", t)
        h.nodes.append(_shell(f"make check-{i}", t + 25 * HOUR, 0))
    for _ in range(DECOYS["other command sharing words"]):
        i, t = next(n), when()
        fail("other command sharing words", f"pytest tests/test_shared{i}.py -k slow", t)
        h.nodes.append(_shell(f"pytest tests/test_shared{i}.py -k fast", t + HOUR, 0))
    for _ in range(DECOYS["commit touching an unrelated file"]):
        i, t = next(n), when()
        fail("commit touching an unrelated file", f"eslint web/app{i}.js", t, files=(f"web/app{i}.js",))
        h.nodes.append(_commit(t + HOUR, f"web/other{i}.js", f"web/app{i}.js.map"))
    for _ in range(DECOYS["commit before the failure"]):
        i, t = next(n), when()
        fail("commit before the failure", f"go vet ./cmd/tool{i}/main.go", t, files=(f"cmd/tool{i}/main.go",))
        h.nodes.append(_commit(t - rng.randrange(1, 23 * HOUR), f"cmd/tool{i}/main.go"))
    for _ in range(DECOYS["a same-named file, not a test"]):
        i, t = next(n), when()
        path = f"src/gadget{i}.py"
        fail("a same-named file, not a test", f"ruff check {path}", t, files=(path,))
        h.nodes.append(_commit(t + HOUR, f"lib/gadget{i}.py"))  # only a test file's name reaches its code
    for _ in range(DECOYS["a tested name two packages share"]):
        i, t = next(n), when()
        h.nodes.append(_commit(t - 30 * DAY_MS, f"pkg_a/helper{i}.py"))
        test = f"tests/test_helper{i}.py"
        fail("a tested name two packages share", f"pytest {test}", t, files=(test,))
        h.nodes.append(_commit(t + HOUR, f"pkg_b/helper{i}.py"))
    for _ in range(DECOYS["another service's file of the tested name"]):
        i, t = next(n), when()
        test = f"services/api/tests/test_route{i}.py"
        fail("another service's file of the tested name", f"pytest {test}", t, files=(test,))
        h.nodes.append(_commit(t + HOUR, f"services/web/route{i}.py"))
    for _ in range(DECOYS["turn missing one word"]):
        i, t = next(n), when()
        a, b = rng.sample(WORDS, 2)
        fail("turn missing one word", f"terraform apply -target module.{a}{i}.{b}{i}", t)
        h.nodes.append(_turn(t + HOUR, f"terraform apply on module {a}{i} needs the lock released first"))
    for _ in range(DECOYS["turn 25 h away"]):
        i, t = next(n), when()
        a = rng.choice(WORDS)
        fail("turn 25 h away", f"helm upgrade {a}{i}", t)
        h.nodes.append(_turn(t + rng.choice([-25, 25]) * HOUR, f"helm upgrade {a}{i} failed on the quota"))
    for _ in range(DECOYS["only generic words"]):
        t = when()
        fail("only generic words", rng.choice(["npm run", "make", "python3", "git"]), t)
        h.nodes.append(_turn(t + HOUR, "npm run make python3 git: all of these are in my history"))
    for _ in range(DECOYS["another session naming its one word"]):
        # `make X` failed; another session talks about an X that is not the make target's failure.
        i, t = next(n), when()
        a = rng.choice(WORDS)
        fail("another session naming its one word", f"make {a}{i}", t, session=f"agent-one-{i}")
        h.nodes.append(
            _agent_turn(f"other-one-{i}", 0, t + HOUR, f"fix the {a}{i} section of the docs", "Fixed.")
        )
    for _ in range(DECOYS["its own session, never about it"]):
        # The agent ran it while doing something else, and nothing said later in the session is about it.
        i, t = next(n), when()
        a = rng.choice(WORDS)
        sid = f"agent-aside-{i}"
        f = fail("its own session, never about it", f"ruff check src/{a}{i}", t, session=sid)
        h.nodes.append(
            _agent_turn(sid, 0, t - MINUTE, "tidy the README", "Done.", ran=(f"{f.ref} (exit 1)",))
        )
        h.nodes.append(_agent_turn(sid, 1, t + HOUR, "and the changelog?", "Updated."))
    for _ in range(DECOYS["never fixed"]):
        i, t = next(n), when()
        fail("never fixed", f"./scripts/flaky{i}.sh", t, files=(f"scripts/flaky{i}.sh",))
    for _ in range(DECOYS["commit, then the same command failed again"]):
        # The commit held the failing change (`git commit --no-verify`): the next run still fails.
        i, t = next(n), when()
        path = f"src/calc{i}.py"
        f = fail("commit, then the same command failed again", f"pytest -q {path}", t, files=(path,))
        h.nodes.append(_commit(t + rng.randrange(MINUTE, HOUR), path))
        h.nodes.append(_shell(f.ref, t + HOUR + rng.randrange(MINUTE, HOUR), 1, files=(path,)))
    for _ in range(DECOYS["a commit the failing line made itself"]):
        # `sleep 1 && git commit -qam wip && ruff check …`: its commit is made before the line ends.
        i, t = next(n), when()
        path = f"src/cart{i}.py"
        line = f"sleep 1 && git commit -qam wip{i} && ruff check {path}"
        lasts = rng.randrange(1500, 4000)
        fail("a commit the failing line made itself", line, t, files=(path,), duration_ms=lasts)
        made = t + rng.randrange(1000, lasts)
        h.nodes.append(_commit(made - made % 1000, path))  # a commit's time is whole seconds

    # Noise: everyday successes, commits touching noise files, chatter that names no failing command.
    for _ in range(3000):
        h.nodes.append(
            _shell(rng.choice(["git status", "ls", "git diff", "make build", "pytest -q"]), when(), 0)
        )
    for k in range(300):
        h.nodes.append(_commit(when(), f"docs/page{k}.md"))
    for _ in range(200):
        h.nodes.append(_turn(when(), f"let us look at the {rng.choice(WORDS)} service logs again"))
    rng.shuffle(h.nodes)  # insertion order must not matter
    return h


@dataclass
class Scores:
    predicted: set[tuple[str, str, str]]
    truth: set[tuple[str, str, str]]

    @property
    def precision(self) -> float:
        return len(self.predicted & self.truth) / len(self.predicted) if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return len(self.predicted & self.truth) / len(self.truth) if self.truth else 1.0


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[History, Scores]]:
    history = build_history()
    path: Path = tmp_path_factory.mktemp("eval") / "memory.db"
    with open_store(path, create=True) as store:
        with store.transaction():
            store.upsert(history.nodes)
            link_failures(store)
        yield history, Scores(_links(store), history.truth)


def _links(store: Store) -> set[tuple[str, str, str]]:
    return set(store.conn.execute("SELECT from_id, to_id, relation FROM links").fetchall())


@pytest.mark.slow
def test_precision_and_recall_on_the_planted_fixes(evaluated: tuple[History, Scores]) -> None:
    _, scores = evaluated
    # 40 retry + 30 commit + 15 (commit + retry) × 2 + 15 (retry + commit after it) × 2
    # + 15 (retry + the tested code's commit) × 2 + 10 (retry, then a commit for the second failure) × 2
    # + 10 retries of a flaky pass (the commit hours later is no fix) + 20 discussion + 20 the turn it ran
    # in + 10 its session's next turn + 10 fixes among a rebase's commits.
    assert len(scores.truth) == 250
    assert (scores.precision, scores.recall) == (1.0, 1.0)
    by_relation = {
        rel: sum(1 for *_, r in scores.predicted if r == rel) for rel in ("retry", "commit", "discussion")
    }
    assert by_relation == {"retry": 105, "commit": 95, "discussion": 50}


def test_every_decoy_category_adds_no_link(evaluated: tuple[History, Scores]) -> None:
    history, scores = evaluated
    false_links: dict[str, int] = dict.fromkeys(DECOYS, 0)
    for src, _, _ in scores.predicted - scores.truth:
        category = history.category.get(src, "noise")
        false_links[category] = false_links.get(category, 0) + 1
    assert false_links == dict.fromkeys(DECOYS, 0)
    linked = {src for src, _, _ in scores.predicted}
    failures = {cat: sum(1 for c in history.category.values() if c == cat) for cat in DECOYS}
    assert failures == DECOYS  # each category holds exactly the failures it says
    # No failure of a decoy category is linked at all.
    assert {history.category[src] for src in linked} - set(PLANTED) == set()


def test_the_generated_history_is_deterministic() -> None:
    a, b = build_history(), build_history()
    assert [(n.id, n.ts, n.ref) for n in a.nodes] == [(n.id, n.ts, n.ref) for n in b.nodes]
    assert a.truth == b.truth
