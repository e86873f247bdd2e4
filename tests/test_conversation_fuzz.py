"""Fuzzing the transcript parsers (hypothesis): records of any shape, in the real envelopes, never make a parser
or the node builder raise, and a valid exchange after the garbage is still read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusmem.nodes import node_problem
from nexusmem.sources.conversation import aider, claude, codex, gemini
from nexusmem.sources.conversation.build import Builder
from nexusmem.sources.conversation.model import Report, Thread

EXAMPLES = int(os.environ.get("NEXUSMEM_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
ROOT = Path("/fuzz/repo")

any_text = st.text(st.characters(codec=None), max_size=60)
scalars = st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | any_text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=12,
)
stamps = (
    st.sampled_from(["2026-09-11T15:00:00.000Z", "2026-09-11T15:00:00", "", "not a time", "9999-99-99"])
    | any_text
)
cwds = st.sampled_from([str(ROOT), str(ROOT / "src"), "/elsewhere", "relative/dir"]) | any_text
block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image"]) | any_text},
    optional={
        "text": values,
        "id": st.sampled_from(["toolu_1", "toolu_2"]) | values,
        "tool_use_id": st.sampled_from(["toolu_1", "toolu_2"]) | values,
        "name": st.sampled_from(["Bash", "Edit"]) | values,
        "input": st.fixed_dictionaries({}, optional={"command": values, "file_path": values}) | values,
        "content": values,
        "is_error": values,
    },
)
claude_record = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "summary", "system"]) | any_text},
    optional={
        "message": st.fixed_dictionaries(
            {}, optional={"content": st.lists(block, max_size=3) | values, "model": values}
        )
        | values,
        "timestamp": stamps,
        "cwd": cwds,
        "isSidechain": values,
        "agentId": values,
        "sessionId": values,
        "uuid": values,
        "isMeta": values,
        "toolUseResult": values,
    },
)
codex_payload = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "function_call", "function_call_output", "local_shell_call"])
        | any_text
    },
    optional={
        "role": st.sampled_from(["user", "assistant", "developer"]) | values,
        "content": values,
        "name": st.sampled_from(["exec_command", "shell", "shell_command"]) | values,
        "arguments": values
        | st.sampled_from(['{"cmd": "ls"}', '{"command": ["bash", "-lc", "ls"]}', "{bad"]),
        "call_id": st.sampled_from(["c1", "c2"]) | values,
        "output": values,
        "action": values,
        "cwd": cwds,
        "id": values,
        "source": values,
    },
)
codex_record = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg"]) | any_text,
        "payload": codex_payload | values,
    },
    optional={"timestamp": stamps},
)


def _lines(records: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _build(threads: list[Thread]) -> None:
    def match(cwd: str | None) -> tuple[Path, str] | None:
        if cwd and (cwd == str(ROOT) or cwd.startswith(str(ROOT) + "/")):
            return ROOT, os.path.relpath(cwd, ROOT)
        return None

    builder = Builder("p", match, [ROOT], 20_000)
    for thread in threads:
        for node in builder.nodes(thread):
            problem = node_problem(node)
            assert problem is None or "Unicode" in problem or "time" in problem


GOOD_CLAUDE = {
    "type": "user",
    "message": {"role": "user", "content": "FINAL question survives"},
    "timestamp": "2026-09-11T16:00:00.000Z",
    "cwd": str(ROOT),
    "sessionId": "s",
    "uuid": "final-uuid",
}


@FUZZ
@given(st.lists(claude_record | values, max_size=8), st.binary(max_size=40))
def test_claude_parser_never_raises(tmp_path_factory: Any, records: list[Any], junk: bytes) -> None:
    path = tmp_path_factory.mktemp("cc") / "s.jsonl"
    path.write_bytes(
        _lines(records).encode("utf-8", "surrogatepass")
        + junk
        + b"\n"
        + json.dumps(GOOD_CLAUDE).encode()
        + b"\n"
    )
    report = Report()
    threads = claude.parse(path, report)
    _build(threads)
    questions = [e.question for t in threads for e in t.exchanges]
    assert questions[-1] == "FINAL question survives"


@FUZZ
@given(st.lists(codex_record | values, max_size=8))
def test_codex_parser_never_raises(tmp_path_factory: Any, records: list[Any]) -> None:
    path = tmp_path_factory.mktemp("cx") / "rollout-x.jsonl"
    final = {
        "timestamp": "2026-09-11T16:00:00.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "FINAL"}]},
    }
    path.write_text(_lines([*records, final]), encoding="utf-8", errors="surrogatepass")
    threads = codex.parse(path, Report())
    _build(threads)
    assert [e.question for t in threads for e in t.exchanges][-1] == "FINAL"


@FUZZ
@given(
    st.lists(
        st.sampled_from(
            ["#### ", "> ", "", "# aider chat started at 2026-10-09 10:00:00", "/run x", "Running y"]
        )
        | any_text,
        max_size=20,
    )
)
def test_aider_parser_never_raises(tmp_path_factory: Any, lines: list[str]) -> None:
    folder = tmp_path_factory.mktemp("ai")
    path = folder / aider.CHAT_FILE
    text = "\n".join(lines) + "\n# aider chat started at 2026-10-09 11:00:00\n#### FINAL\nanswer\n"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    (folder / aider.INPUT_FILE).write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    threads = aider.parse(path, Report(), cwd=str(ROOT))
    _build(threads)
    assert threads[-1].exchanges[-1].question == "FINAL"


@FUZZ
@given(values, st.lists(values, max_size=5))
def test_gemini_parser_never_raises(tmp_path_factory: Any, doc: Any, messages: list[Any]) -> None:
    folder = tmp_path_factory.mktemp("gm")
    for n, body in enumerate((doc, {"sessionId": "s", "messages": messages})):
        path = folder / f"session-{n}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        _build(gemini.parse(path, Report(), cwd=str(ROOT)))


_ids = st.sampled_from(["a", "b", "c"])
gemini_records = (
    values
    | st.builds(lambda i: {"$rewindTo": i}, _ids | values)
    | st.builds(lambda v: {"$set": v}, values | st.builds(lambda m: {"messages": m}, values))
    | st.builds(
        lambda i, kind, stamp, v: {"id": i, "type": kind, "timestamp": stamp, "content": v, "toolCalls": v},
        _ids,
        st.sampled_from(["user", "gemini", "info"]) | values,
        stamps,
        values,
    )
)


@FUZZ
@given(st.lists(gemini_records, max_size=8))
def test_gemini_jsonl_parser_never_raises(tmp_path_factory: Any, records: list[Any]) -> None:
    path = tmp_path_factory.mktemp("gj") / "session-0.jsonl"
    head = {"sessionId": "s", "projectHash": "0" * 64}
    path.write_text(_lines([head, *records]), encoding="utf-8", errors="surrogatepass")
    _build(gemini.parse(path, Report(), cwd=str(ROOT)))


def _node_map(threads: list[Thread]) -> dict[str, tuple[str, str, int, str]]:
    builder = Builder("p", lambda cwd: (ROOT, ".") if cwd else None, [ROOT], 20_000)
    out: dict[str, tuple[str, str, int, str]] = {}
    for thread in threads:
        for node in builder.nodes(thread):
            out[node.natural_key] = (node.title, node.body, node.ts, node.meta_json())
    return out


def _resume_matches_full_read(path: Path, records: list[str], cut: int, module: Any) -> None:
    """Reading the first CUT lines, then on from the saved position after the rest was appended, stores
    exactly what one read of the whole file stores (later versions of a node replace earlier ones)."""
    path.write_text("".join(records[:cut]), encoding="utf-8")
    first, resume = module.parse_from(path, Report(), None)
    seen = _node_map(first)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(records[cut:]))
    second, _ = module.parse_from(path, Report(), resume)  # None (no message yet): from the top
    seen.update(_node_map(second))
    whole = _node_map(module.parse(path, Report()))
    assert seen == whole


def test_reading_on_from_the_saved_position_equals_a_full_read(tmp_path: Path) -> None:
    """At every line the fixture files could have been cut by a sync while the agent was writing them."""
    from datetime import datetime, timezone

    from helpers import transcripts as T

    start = datetime(2026, 9, 11, 15, 0, tzinfo=timezone.utc)
    T.write_claude(tmp_path / "cc", ROOT, tmp_path / "other", start)
    claude_file = tmp_path / "cc" / "projects" / "-some-lossy-encoded-name" / f"{T.CLAUDE_SESSION}.jsonl"
    lines = claude_file.read_text(encoding="utf-8").splitlines(keepends=True)[:-3]  # the odd tail left out
    for cut in range(1, len(lines)):
        _resume_matches_full_read(tmp_path / f"claude-{cut}.jsonl", lines, cut, claude)
    rollout = T.write_codex(tmp_path / "cx", ROOT, tmp_path / "other", start)
    lines = [
        ln for ln in rollout.read_text(encoding="utf-8").splitlines(keepends=True) if "mystery" not in ln
    ]
    for cut in range(1, len(lines)):
        _resume_matches_full_read(tmp_path / f"rollout-{cut}.jsonl", lines, cut, codex)
