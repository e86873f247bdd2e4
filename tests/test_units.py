"""Pure pieces: identity, config validation, ranking constants, fusion, packing, migrations."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nexusmem import config, identity
from nexusmem.errors import ConfigError
from nexusmem.retrieve import fuse, rank
from nexusmem.retrieve.pack import Candidate, pack


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widget.git",
        "https://github.com/acme/widget",
        "https://user:pw@github.com/acme/widget.git/",
        "ssh://git@github.com/acme/widget.git",
        "ssh://git@github.com:22/acme/widget",
        "git://github.com/Acme/widget/",
    ],
)
def test_normalise_url_gives_one_namespace(url: str) -> None:
    assert identity.normalise_url(url) == "github.com/acme/widget"


def test_node_id_is_stable_and_24_hex() -> None:
    a = identity.node_id("p", "git_commit", "abc")
    assert a == identity.node_id("p", "git_commit", "abc") and len(a) == 24
    assert a != identity.node_id("p", "code_diff", "abc") != identity.node_id("q", "git_commit", "abc")


def test_config_defaults_roundtrip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    assert config.write_defaults(path)
    assert config.load(path) == config.DEFAULTS
    assert not config.write_defaults(path)  # never overwritten
    path.write_text(json.dumps({"sources": {"docs": {"enabled": "yes"}}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'sources\.docs\.enabled' must be boolean"):
        config.load(path)
    path.write_text(json.dumps({"limits": {"maxBodyChars": -1}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="must not be negative"):
        config.load(path)
    path.write_text(json.dumps({"sources": {"diff": {"skip": ["a", 3]}}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="list of strings"):
        config.load(path)
    path.write_text(json.dumps({"limits": {"maxBodyChars": 500}}), encoding="utf-8")
    merged = config.load(path)
    assert merged["limits"]["maxBodyChars"] == 500 and merged["query"]["budget"] == 2000


def test_prior_exponents_bound_the_joint_gap_to_2x() -> None:
    assert round(rank.SIGNAL_EXP, 3) == 0.215 and round(rank.RECENCY_EXP, 3) == 0.288
    best = rank.score(1.0, 1.0, 0, 0, "observed")
    worst = rank.score(1.0, 0.0, 0, 10**15, "observed")
    assert math.isclose(best / worst, 2.0, rel_tol=1e-6)
    assert rank.score(1.0, 0.5, 0, 0, "observed", superseded=True) == pytest.approx(
        0.5 * rank.score(1.0, 0.5, 0, 0, "observed")
    )
    assert rank.score(1.0, 0.5, 0, 0, "observed", rejected=True) == pytest.approx(
        0.3 * rank.score(1.0, 0.5, 0, 0, "observed")
    )


def test_recency_fades_faster_for_less_trusted_provenance() -> None:
    month = 30 * rank.DAY_MS
    assert rank.recency(0, month, "observed") == pytest.approx(0.3 + 0.7 * 0.5)
    assert (
        rank.recency(0, month, "derived")
        < rank.recency(0, month, "recorded")
        < rank.recency(0, month, "authored")
        < rank.recency(0, month, "observed")
    )


def test_rrf_uses_positions_only() -> None:
    scores = fuse.rrf([["a", "b"], ["b", "c"]])
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61) and scores["c"] == pytest.approx(1 / 62)
    assert rank.normalise({"a": 3.0, "b": 1.0}) == {"a": 1.0, "b": rank.RELEVANCE_FLOOR}


def test_pack_skips_what_does_not_fit_caps_siblings_and_places_fixes() -> None:
    ranked = [
        Candidate("big", 1.0, None, 500),
        Candidate("s1", 0.9, "doc", 10),
        Candidate("s2", 0.8, "doc", 10),
        Candidate("s3", 0.7, "doc", 10),
        Candidate("fail", 0.6, None, 10),
        Candidate("small", 0.5, None, 10),
    ]
    fixes = {"fail": [("fix", "retry")]}
    extra = {"fix": Candidate("fix", 0.0, None, 10)}
    placed, used = pack(ranked, 100, lambda i: fixes.get(i, []), extra.get)
    order = [(p.id, p.linked_from) for p in placed]
    assert order == [("s1", None), ("s2", None), ("fail", None), ("fix", "fail"), ("small", None)]
    assert placed[3].score == 0.6 and used == 50


def test_migrations_from_empty_and_every_earlier_version(tmp_path: Path) -> None:
    from nexusmem.store import connection, migrations

    for start in range(0, migrations.LATEST + 1):
        path = tmp_path / f"v{start}.db"
        conn = connection.connect(path)
        migrations.migrate(conn, target=start)
        assert migrations.current_version(conn) == start
        applied = migrations.migrate(conn)
        assert applied == list(range(start + 1, migrations.LATEST + 1))
        assert migrations.current_version(conn) == migrations.LATEST
        assert migrations.migrate(conn) == []
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"nodes", "links", "sources", "meta", "node_files", "nodes_fts"} <= tables
        conn.close()


def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    from nexusmem.errors import StoreError
    from nexusmem.store import connection, migrations, open_store

    path = tmp_path / "m.db"
    conn = connection.connect(path)
    migrations.migrate(conn)
    conn.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 0)")
    conn.close()
    with pytest.raises(StoreError, match="newer than this NexusMem"):
        open_store(path)
