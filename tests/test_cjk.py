"""Chinese and Japanese recall through the trigram index, end to end: real repo, `sync`, `query --json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexusmem import project
from nexusmem.retrieve import cjk

from helpers import commit, run_cli


def query_json(repo: Path, text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "query", "--json", "--", text).stdout)
    return data


@pytest.fixture
def history(repo: Path) -> Path:
    commit(repo, "修复缓存锁文件过期的问题", {"cache.py": "LOCK_TTL = 30\n"})
    commit(repo, "キャッシュのロックファイルを修正", {"lock.py": "STALE = True\n"})
    commit(repo, "增加用户登录日志", {"login.py": "LOG = True\n"})
    commit(repo, "Add the English README", {"README.md": "# Project\n\nPlain English text.\n"})
    return repo


@pytest.mark.slow
@pytest.mark.parametrize("embed", [False, True])
def test_chinese_and_japanese_queries_find_their_commits(history: Path, embed: bool) -> None:
    run_cli("-C", str(history), "sync", *([] if embed else ["--no-embed"]))
    zh = query_json(history, "缓存锁")
    assert zh["items"] and zh["items"][0]["title"] == "修复缓存锁文件过期的问题"
    assert zh["bm25_matched"] >= 1
    ja = query_json(history, "ロックファイル")
    assert ja["items"] and ja["items"][0]["title"] == "キャッシュのロックファイルを修正"
    # A longer question shares trigrams with the commit (修复缓存 / 缓存锁 / 锁文件) without being in it.
    longer = query_json(history, "怎么修复缓存锁文件")
    assert longer["items"][0]["title"] == "修复缓存锁文件过期的问题"
    # Two characters are below a trigram: a substring scan of the (small) CJK index still finds them.
    short = query_json(history, "登录")
    assert [it["title"] for it in short["items"]][:1] == ["增加用户登录日志"]


def test_only_cjk_bearing_nodes_are_indexed_and_deletes_follow(history: Path) -> None:
    run_cli("-C", str(history), "sync", "--no-embed")
    with project.load(history).open_store() as store:
        indexed = store.cjk_count()
        total = store.node_count()
    # 3 CJK commits (and their diffs' commit messages are not in the diff body): far fewer than all nodes.
    assert 3 <= indexed < total
    run_cli("-C", str(history), "sync", "--rebuild", "--no-embed")
    with project.load(history).open_store() as store:
        assert store.cjk_count() == indexed


def test_english_queries_do_not_touch_the_trigram_index() -> None:
    assert cjk.trigrams("cache lock file") == ([], [])
    grams, short = cjk.trigrams("修复缓存 and 登录")
    assert grams == ["修复缓", "复缓存"] and short == ["登录"]
