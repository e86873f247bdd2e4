"""Session summaries end to end: the four agents' transcripts in their real formats (helpers.transcripts) →
conversation turns → one summary per session from the loopback Ollama chat stand-in, through the real CLI."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from nexusmem import project as project_mod

from helpers import commit, run_cli
from helpers import transcripts as T
from helpers.chat_standin import chat_standin
from helpers.git import init_repo

START = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=3)


def chat_calls(model: Any) -> int:
    return sum(1 for path, _ in model.requests if path in ("/api/chat", "/api/generate"))


def test_transcripts_become_one_summary_per_session(repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    commit(repo, "feat: cache", {"src/cache.py": "CACHE = {}\n", "src/db.py": "POOL = 5\n"})
    other = init_repo(tmp_path / "other")
    T.write_claude(isolated_home / ".claude", repo, other, START)
    T.write_codex(isolated_home / ".codex", repo, other, START)
    T.write_aider(repo, START)
    T.write_gemini(isolated_home / ".gemini", repo, START)
    with chat_standin() as model:
        run_cli("-C", str(repo), "init")
        path = repo / ".nexusmem" / "config.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["embedding"]["provider"] = "none"
        data["contradictions"]["autoCheck"] = False
        data["sources"]["conversation"]["enabled"] = True
        data["sources"]["session"].update({"enabled": True, "url": model.url, "maxSessions": 50})
        path.write_text(json.dumps(data), encoding="utf-8")
        run_cli("-C", str(repo), "sync")
        with project_mod.load(repo).open_store(readonly=True) as store:
            turns = list(store.iter_nodes("conversation_turn"))
            made = {n.meta["session_id"]: n for n in store.iter_nodes("session_summary")}
            main_sessions = {
                (n.meta["agent"], n.meta["session_id"]) for n in turns if not n.meta["sidechain"]
            }
            assert {(n.meta["agent"], sid) for sid, n in made.items()} == main_sessions
            assert {n.meta["agent"] for n in made.values()} == {"claude-code", "codex", "aider", "gemini"}
            claude = made[T.CLAUDE_SESSION]
            assert "why does test_cache_eviction fail?" in claude.body
            assert "retry helpers" not in claude.body  # a subagent's thread is not the session's
        prompts = [body["messages"][1]["content"] for p, body in model.requests if p == "/api/chat"]
        assert len(prompts) == len(main_sessions) and all("Q: " not in p for p in prompts)
        calls = chat_calls(model)
        run_cli("-C", str(repo), "sync")
        assert chat_calls(model) == calls  # the memo: nothing changed, no call
