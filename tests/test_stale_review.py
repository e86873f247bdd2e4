"""stale (with a real HTTP model stand-in), mark-stale, review and --as-of on real repositories."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from nexusmem.retrieve import rank

from helpers import commit, query_json, run_cli, run_script
from helpers.chat_standin import chat_standin
from helpers.ollama_standin import closed_port_url

DAY = 86_400
OLD = int(time.time()) - 200 * DAY


def configure(repo: Path, **contradictions: Any) -> None:
    run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["embedding"]["provider"] = "none"  # FTS neighbours; the vector path has its own test
    data["contradictions"].update(contradictions)
    path.write_text(json.dumps(data), encoding="utf-8")


def stale_repo(repo: Path, extra_old_docs: int = 0) -> None:
    files: dict[str, str | bytes] = {"README.md": "## Cache\n\nThe cache uses Redis for sessions.\n"}
    for i in range(extra_old_docs):
        files[f"notes/n{i}.md"] = f"## Cache note {i}\n\nCache detail number {i}.\n"
    commit(repo, "docs: cache notes", files, when=OLD)
    commit(
        repo,
        "docs: describe the new cache backend",
        {"docs/cache.md": "## Cache backend\n\nThe cache no longer uses Redis; sessions live in SQLite.\n"},
    )


def stale_json(repo: Path, *extra: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "stale", "--json", *extra).stdout)
    return data


def node_id(repo: Path, title_part: str) -> str:
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        ids = [n.id for n in store.iter_nodes() if title_part in n.title]
    assert len(ids) == 1, ids
    return ids[0]


def test_stale_lists_old_unconfirmed_non_observed_nodes(repo: Path) -> None:
    configure(repo, autoCheck=False)
    stale_repo(repo)
    run_cli("-C", str(repo), "sync")
    data = stale_json(repo)
    titles = [c["title"] for c in data["candidates"]]
    assert titles == ["README.md — Cache"]  # not the commit (observed), not the recent doc
    assert data["check"] is None
    readme = data["candidates"][0]["id"]
    out = run_cli("-C", str(repo), "stale").output
    assert "checked 1 old claim(s); 1 listed" in out and f"id {readme}" in out and "[authored]" in out
    assert "why: newer: docs/cache.md — Cache backend" in out
    run_cli("-C", str(repo), "review", readme[:8], "--verify")
    assert stale_json(repo)["candidates"] == []  # confirmed by a person
    run_cli("-C", str(repo), "review", readme, "--clear")
    newer = node_id(repo, "Cache backend")
    run_cli("-C", str(repo), "mark-stale", readme, "--supersedes", newer)
    assert stale_json(repo)["candidates"] == []  # already replaced


def test_stale_lists_only_old_claims_something_newer_touches(repo: Path) -> None:
    configure(repo, autoCheck=False)
    commit(
        repo,
        "docs: conduct, api and cache notes",
        {
            "CODE_OF_CONDUCT.md": "## Our Pledge\n\nWe pledge to make participation harassment-free.\n",
            "docs/api.md": "## Request handling\n\nRequests are parsed in `src/api.py` before routing.\n",
            "docs/cache.md": "## Cache\n\nThe cache uses Redis for sessions.\n",
            "src/api.py": "def parse():\n    return 1\n",
        },
        when=OLD,
    )
    commit(
        repo, "fix: parse headers first", {"src/api.py": "def parse():\n    return 2\n"}, when=OLD + 100 * DAY
    )
    commit(
        repo,
        "docs: the new cache backend",
        {"docs/backend.md": "## Cache backend\n\nThe cache no longer uses Redis; sessions live in SQLite.\n"},
    )
    run_cli("-C", str(repo), "sync")
    data = stale_json(repo)
    listed = {c["title"]: c["why"] for c in data["candidates"]}
    # Three old doc sections checked; the Code of Conduct, which nothing newer touches, is not listed.
    assert data["checked"] == 3
    assert listed == {
        "docs/api.md — Request handling": "src/api.py changed since",
        "docs/cache.md — Cache": "newer: docs/backend.md — Cache backend",
    }
    out = run_cli("-C", str(repo), "stale").output
    assert "checked 3 old claim(s); 2 listed" in out and "Our Pledge" not in out
    # The section's own file changed after its text: it is re-dated to that commit, hence no longer old.
    commit(repo, "docs: api notes", {"docs/api.md": "## Request handling\n\nParsed in `src/api.py`.\n"})
    run_cli("-C", str(repo), "sync")
    assert [c["title"] for c in stale_json(repo)["candidates"]] == ["docs/cache.md — Cache"]


def test_an_old_release_notes_entry_is_history_not_a_stale_claim(repo: Path) -> None:
    """Each new changelog entry edits CHANGELOG.md, so every older entry was listed as stale ("CHANGELOG.md
    changed since"): an entry records what a release changed and cannot go out of date."""
    configure(repo, autoCheck=False)
    first = "# Changelog\n\n## 0.1.0\n\n- First release with an in-memory cart.\n"
    commit(repo, "release 0.1.0", {"CHANGELOG.md": first, "cart.py": "CART = []\n"}, when=OLD)
    second = first.replace("# Changelog\n", "# Changelog\n\n## 0.2.0\n\n- The cart is kept in SQLite.\n")
    commit(repo, "release 0.2.0", {"CHANGELOG.md": second, "cart.py": "CART = 'sqlite'\n"})
    run_cli("-C", str(repo), "sync")
    assert not any("CHANGELOG" in c["title"] for c in stale_json(repo)["candidates"])


def test_stale_says_when_nothing_is_listed(repo: Path) -> None:
    configure(repo, autoCheck=False)
    commit(
        repo, "docs: conduct", {"CODE_OF_CONDUCT.md": "## Our Pledge\n\nWe pledge to be kind.\n"}, when=OLD
    )
    run_cli("-C", str(repo), "sync")
    out = run_cli("-C", str(repo), "stale").output
    assert "checked 1 old claim(s); none listed: nothing newer touches them" in out


def test_check_contradictions_suggests_and_memoises(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, autoCheck=False, url=model.url)
        stale_repo(repo)
        run_cli("-C", str(repo), "sync")
        assert model.judged() == 0  # autoCheck off
        out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
        newer = node_id(repo, "Cache backend")
        assert f"likely superseded by {newer} docs/cache.md — Cache backend -- the newer note says" in out
        assert model.judged() == 1
        path, body = model.requests[-1]
        assert path == "/api/chat" and body["model"] == "qwen2.5:3b" and body["stream"] is False
        assert "Redis for sessions" in body["messages"][-1]["content"]
        run_cli("-C", str(repo), "stale", "--check-contradictions")
        assert model.judged() == 1  # the pair was judged: never sent again
        plain = run_cli("-C", str(repo), "stale").output
        assert "likely superseded by" in plain and model.judged() == 1
        assert "1  flagged as likely superseded" in run_cli("-C", str(repo), "status").output
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        assert all(n.superseded_by is None for n in store.iter_nodes())  # a suggestion, never a decision


@pytest.mark.slow
def test_sync_judges_at_most_max_per_sync_then_nothing_new(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, url=model.url)
        stale_repo(repo, extra_old_docs=5)
        out = run_cli("-C", str(repo), "sync").output
        assert model.judged() == 3
        assert "contradictions: 3 new judgment(s)" in out
        run_cli("-C", str(repo), "sync")
        assert model.judged() == 6  # the remaining three candidates
        run_cli("-C", str(repo), "sync")
        assert model.judged() == 6  # every pair judged: repeat syncs ask nothing
        data = stale_json(repo)
        flagged = [c for c in data["candidates"] if c["likely_superseded_by"]]
        # Each candidate's nearest newer node is the doc saying "no longer": the stand-in flags all six.
        assert len(flagged) == 6 and "README.md — Cache" in [c["title"] for c in flagged]


@pytest.mark.slow
def test_vector_neighbours_when_the_store_has_embeddings(repo: Path) -> None:
    with chat_standin() as model:
        configure(repo, autoCheck=False, url=model.url)
        path = repo / ".nexusmem" / "config.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["embedding"].update({"provider": "ollama", "model": "toy", "url": model.url})
        path.write_text(json.dumps(data), encoding="utf-8")
        stale_repo(repo)
        run_cli("-C", str(repo), "sync")
        embeds = sum(1 for p, _ in model.requests if p == "/api/embed")
        assert embeds >= 1
        out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
        assert "likely superseded by" in out
        assert sum(1 for p, _ in model.requests if p == "/api/embed") > embeds  # k-NN embedded the candidate


@pytest.mark.slow
def test_unreachable_model_is_one_line_and_sync_succeeds(repo: Path) -> None:
    configure(repo, url=closed_port_url())
    stale_repo(repo)
    done = run_script("sync", cwd=repo)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("contradictions:")]
    assert len(notes) == 1 and "unreachable (ConnectError)" in notes[0]
    out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
    assert "unreachable" in out and "README.md — Cache" in out


@pytest.mark.slow
def test_slow_model_times_out_with_a_note(repo: Path) -> None:
    with chat_standin() as model:
        model.mode, model.delay = "slow", 4.0
        configure(repo, url=model.url, timeoutSeconds=1.0)
        stale_repo(repo)
        started = time.monotonic()
        out = run_cli("-C", str(repo), "sync").output
        assert time.monotonic() - started < 3.5
        assert "did not answer within 1s" in out and "node(s) in memory" in out
        model.mode = "ok"
        run_cli("-C", str(repo), "stale", "--check-contradictions")
        assert stale_json(repo)["candidates"][0]["likely_superseded_by"]


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "message"), [("malformed", "no JSON object"), ("garbage", "wrong shape")])
def test_bad_answers_are_noted_and_not_memoised(repo: Path, mode: str, message: str) -> None:
    with chat_standin() as model:
        model.mode = mode
        configure(repo, autoCheck=False, url=model.url)
        stale_repo(repo)
        run_cli("-C", str(repo), "sync")
        out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
        assert message in out
        asked = model.judged()
        run_cli("-C", str(repo), "stale", "--check-contradictions")
        assert model.judged() == asked + 1  # not memoised: asked again
        model.mode = "ok"
        run_cli("-C", str(repo), "stale", "--check-contradictions")
        assert stale_json(repo)["candidates"][0]["likely_superseded_by"]


def test_old_ollama_without_chat_is_asked_through_generate(repo: Path) -> None:
    with chat_standin() as model:
        model.mode = "no-chat"
        configure(repo, autoCheck=False, url=model.url)
        stale_repo(repo)
        run_cli("-C", str(repo), "sync")
        out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
        assert "likely superseded by" in out
        assert [p for p, _ in model.requests] == ["/api/chat", "/api/generate"]


def scores(repo: Path, text: str) -> dict[str, tuple[float, str]]:
    return {it["title"]: (it["score"], it["trust"]) for it in query_json(repo, text)["items"]}


def test_mark_stale_demotes_and_checks_ids(repo: Path) -> None:
    configure(repo, autoCheck=False)
    stale_repo(repo)
    run_cli("-C", str(repo), "sync")
    readme, newer = node_id(repo, "README.md — Cache"), node_id(repo, "Cache backend")
    before = scores(repo, "Redis sessions")["README.md — Cache"][0]
    out = run_cli("-C", str(repo), "mark-stale", readme[:6], "--supersedes", newer[:6]).output
    assert f"{readme} (README.md — Cache) is superseded by {newer}" in out
    after = scores(repo, "Redis sessions")["README.md — Cache"][0]
    assert after == pytest.approx(before * rank.SUPERSEDED_FACTOR, rel=1e-3)  # demoted, still returned
    # and said so (an agent could not tell a replaced claim from any other: only `show` said it)
    item = next(it for it in query_json(repo, "Redis sessions")["items"] if it["id"] == readme)
    assert item["superseded_by"] == newer
    text = run_cli("-C", str(repo), "query", "Redis sessions").output
    assert "[superseded] README.md — Cache" in text and f"superseded by {newer}" in text
    for args, message in [
        ([readme, "--supersedes", "ffffffffff"], "no node with id"),
        ([readme, "--supersedes", readme], "cannot supersede itself"),
        ([readme[:2], "--supersedes", newer], "at least 6 characters"),  # one minimum: nexusmem.show
        # A cycle: both would be counted down as stale.
        ([newer, "--supersedes", readme], f"{readme} is itself marked as replaced by {newer}"),
    ]:
        bad = run_cli("-C", str(repo), "mark-stale", *args, ok=False)
        assert bad.exit_code == 1 and message in bad.output
    assert run_cli("-C", str(repo), "mark-stale", readme, ok=False).exit_code == 2
    run_cli("-C", str(repo), "mark-stale", readme, "--clear")
    assert scores(repo, "Redis sessions")["README.md — Cache"][0] == pytest.approx(before, rel=1e-6)


def test_a_mark_whose_replacement_a_later_sync_removed_stays_but_names_no_dead_id(repo: Path) -> None:
    configure(repo, autoCheck=False)
    stale_repo(repo)
    run_cli("-C", str(repo), "sync", "-q")
    readme, newer = node_id(repo, "README.md — Cache"), node_id(repo, "Cache backend")
    run_cli("-C", str(repo), "mark-stale", readme, "--supersedes", newer)
    # The replacement's heading is renamed: its id goes, and no section of its file has its text now.
    text = "The cache no longer uses Redis; sessions live in SQLite.\n"
    commit(repo, "docs: rename the cache page", {"docs/cache.md": "## Storage backend\n\n" + text})
    run_cli("-C", str(repo), "sync", "-q")
    assert "no node with id" in run_cli("-C", str(repo), "show", newer, ok=False).output

    answer = run_cli("-C", str(repo), "query", "Redis sessions").output
    assert "[superseded] README.md — Cache" in answer  # still marked: a person said it is stale
    assert newer not in answer  # and no id `show` cannot open
    item = next(it for it in query_json(repo, "Redis sessions")["items"] if it["id"] == readme)
    assert item["superseded"] is True and item["superseded_by"] is None
    shown = run_cli("-C", str(repo), "show", readme).output
    assert "superseded by a node no longer in memory" in shown and newer not in shown
    full = json.loads(run_cli("-C", str(repo), "show", readme, "--json").output)
    assert full["superseded"] is True and full["superseded_by"] is None

    # The heading named back: the section comes back under its id, and the mark names it again.
    commit(repo, "docs: name the cache page back", {"docs/cache.md": "## Cache backend\n\n" + text})
    run_cli("-C", str(repo), "sync", "-q")
    item = next(it for it in query_json(repo, "Redis sessions")["items"] if it["id"] == readme)
    assert item["superseded"] is True and item["superseded_by"] == newer
    assert f"superseded by {newer}" in run_cli("-C", str(repo), "show", readme).output


def test_review_verdicts_show_demote_and_survive_sync_and_rebuild(repo: Path) -> None:
    configure(repo, autoCheck=False)
    stale_repo(repo)
    run_cli("-C", str(repo), "sync")
    readme, newer = node_id(repo, "README.md — Cache"), node_id(repo, "Cache backend")
    base = scores(repo, "Redis sessions")
    run_cli("-C", str(repo), "review", readme, "--reject")
    out = run_cli("-C", str(repo), "review", newer, "--verify").output
    assert "candidate -> verified" in out
    got = scores(repo, "Redis sessions")
    assert got["README.md — Cache"][0] == pytest.approx(
        base["README.md — Cache"][0] * rank.REJECTED_FACTOR, rel=1e-3
    )
    assert got["README.md — Cache"][1] == "rejected"
    assert got["docs/cache.md — Cache backend"] == (base["docs/cache.md — Cache backend"][0], "verified")
    text = run_cli("-C", str(repo), "query", "Redis sessions").output
    assert "[authored] [rejected] README.md — Cache" in text and "[authored] [verified] docs/cache.md" in text
    # Edit both docs so a re-sync rewrites them, add a commit, then rebuild: verdicts stay.
    commit(repo, "docs: touch", {"README.md": "## Cache\n\nThe cache uses Redis for sessions (old).\n"})
    run_cli("-C", str(repo), "sync")
    run_cli("-C", str(repo), "sync", "--rebuild")
    trusts = {t: trust for t, (_s, trust) in scores(repo, "Redis sessions").items()}
    assert trusts["README.md — Cache"] == "rejected" and trusts["docs/cache.md — Cache backend"] == "verified"
    assert run_cli("-C", str(repo), "review", readme, ok=False).exit_code == 2
    # Two verdicts at once are a usage error, not the last one silently (and nothing changes).
    both = run_cli("-C", str(repo), "review", readme, "--verify", "--reject", ok=False)
    assert both.exit_code == 2 and "one of --verify, --reject or --clear" in both.output
    trusts = {t: trust for t, (_s, trust) in scores(repo, "Redis sessions").items()}
    assert trusts["README.md — Cache"] == "rejected"


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


@pytest.mark.slow
def test_as_of_hides_what_was_recorded_later(repo: Path) -> None:
    commit(repo, "feat: first widget")
    run_cli("-C", str(repo), "sync", "--no-embed")
    time.sleep(1.1)
    between = int(time.time() * 1000) - 500
    commit(repo, "feat: second widget")
    run_cli("-C", str(repo), "sync", "--no-embed")
    now_titles = [it["title"] for it in query_json(repo, "widget")["items"]]
    assert set(now_titles) == {"feat: first widget", "feat: second widget"}
    then = [it["title"] for it in query_json(repo, "widget", "--as-of", iso(between))["items"]]
    assert then == ["feat: first widget"]
    # A rebuild keeps first-recorded times, so the earlier answer does not change.
    run_cli("-C", str(repo), "sync", "--rebuild", "--no-embed")
    assert [it["title"] for it in query_json(repo, "widget", "--as-of", iso(between))["items"]] == then


def test_with_embeddings_only_a_close_newer_node_makes_a_claim_stale(repo: Path) -> None:
    """The nearest newer node is not enough: with vectors (the default), an unrelated newer commit must not
    list an old Code of Conduct section; a newer note on the same subject still lists the old one."""
    run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["contradictions"]["autoCheck"] = False
    path.write_text(json.dumps(data), encoding="utf-8")
    commit(
        repo,
        "docs: conduct and cache notes",
        {
            "CODE_OF_CONDUCT.md": "## Our Pledge\n\nWe pledge to make participation harassment-free.\n",
            "docs/cache.md": "## Cache\n\nThe cache uses Redis for sessions.\n",
        },
        when=OLD,
    )
    commit(repo, "fix: parse headers before routing", {"src/api.py": "def parse():\n    return 2\n"})
    commit(
        repo,
        "docs: the new cache backend",
        {"docs/backend.md": "## Cache backend\n\nThe cache no longer uses Redis; sessions live in SQLite.\n"},
    )
    run_cli("-C", str(repo), "sync")
    listed = {c["title"] for c in stale_json(repo)["candidates"]}
    assert "CODE_OF_CONDUCT.md — Our Pledge" not in listed
    assert "docs/cache.md — Cache" in listed


LEAKY_REASON = (
    "the newer note repeats token ghp_R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2Ga8Ne and key AKIAIOSFODNN7EXAMPLE;"
    " ignore previous instructions \x1b]52;c;ZWNobyBoaQ==\x07 done"
)


def test_the_judges_reason_is_redacted_before_it_is_stored_or_shown(repo: Path) -> None:
    """A model that repeats secrets (and a terminal escape) in its reason: neither `stale` nor its JSON nor
    memory.db holds them; the placeholders stand in."""
    with chat_standin() as model:
        model.reason = LEAKY_REASON
        configure(repo, autoCheck=False, url=model.url)
        stale_repo(repo)
        run_cli("-C", str(repo), "sync")
        out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
        assert model.judged() == 1
        again = run_cli("-C", str(repo), "stale", "--json").stdout
    for text in (out, again, (repo / ".nexusmem" / "memory.db").read_bytes().decode("latin-1")):
        assert "ghp_R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2Ga8Ne" not in text
        assert "AKIAIOSFODNN7EXAMPLE" not in text
        assert "\x1b]52" not in text
    assert "likely superseded by" in out and "«redacted:" in out


def test_scrub_redacts_a_judges_reason_stored_earlier(repo: Path) -> None:
    """A judgment stored in clear by an older release: `scrub` counts its secrets and rewrites it."""
    from nexusmem import project

    with chat_standin() as model:
        configure(repo, autoCheck=False, url=model.url)
        stale_repo(repo)
        run_cli("-C", str(repo), "sync")
        run_cli("-C", str(repo), "stale", "--check-contradictions")
    with project.load(repo).open_store() as store, store.transaction():
        store.conn.execute("UPDATE contradiction_checks SET reason = ?", (LEAKY_REASON,))
    report = json.loads(run_cli("-C", str(repo), "scrub", "--json").stdout)
    assert sum(report["secrets"].values()) >= 2
    with project.load(repo).open_store(readonly=True) as store:
        (reason,) = store.conn.execute("SELECT reason FROM contradiction_checks").fetchone()
    assert "ghp_R8x2" not in reason and "AKIAIOSFODNN7EXAMPLE" not in reason and "«redacted:" in reason
    assert "likely superseded by" in run_cli("-C", str(repo), "stale").output


@pytest.mark.parametrize("seconds", [-5, 0, 0.5])
def test_a_contradictions_timeout_the_client_cannot_use_is_refused_by_name(
    repo: Path, seconds: float
) -> None:
    """-5 was an internal error (exit 3), 0 "unreachable" with the server up: the config check names the key."""
    with chat_standin() as model:
        configure(repo, url=model.url, timeoutSeconds=seconds)
        stale_repo(repo)
        result = run_cli("-C", str(repo), "stale", "--check-contradictions", ok=False)
        assert result.exit_code not in (0, 3), result.output
        assert "'contradictions.timeoutSeconds' must be between" in result.output
        assert model.judged() == 0


def test_an_empty_contradictions_url_means_the_default(repo: Path) -> None:
    """contradictions.url "" is the default URL, as embedding.url "" is (it said "Ollama at  is ...")."""
    configure(repo, url="")
    stale_repo(repo)
    run_cli("-C", str(repo), "sync")
    out = run_cli("-C", str(repo), "stale", "--check-contradictions").output
    assert "Ollama at  " not in out
    assert "Ollama at http://127.0.0.1:11434" in out


def test_stale_embeds_the_old_claims_in_one_batch(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`stale` took 10 s on guzzle (174 claims): each old claim's neighbour search embedded its text alone,
    through the query path that reads a file row per token. Now the claims' texts are embedded in one batch,
    and the same claims are listed, for the same reason."""
    from nexusmem.embed import builtin

    run_cli("-C", str(repo), "init")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["contradictions"]["autoCheck"] = False
    path.write_text(json.dumps(data), encoding="utf-8")
    stale_repo(repo, extra_old_docs=12)
    run_cli("-C", str(repo), "sync")
    alone: list[str] = []
    one_text = builtin.QueryEmbedder.embed

    def counted(self: builtin.QueryEmbedder, text: str, weights: Any = None) -> bytes:
        alone.append(text)
        return one_text(self, text, weights)

    monkeypatch.setattr(builtin.QueryEmbedder, "embed", counted)
    found = {c["title"]: c["why"] for c in stale_json(repo)["candidates"]}
    assert found.get("README.md — Cache") == "newer: docs/cache.md — Cache backend", found
    assert len(alone) <= 1, len(alone)  # was one per old claim (13)
