"""The PowerShell hook, checked without PowerShell (pwsh cannot be installed on the build machines).

1. A real PowerShell grammar (tree-sitter-powershell) parses shell/nexusmem.ps1: any ERROR or MISSING node
   fails the build, and a planted syntax error is caught.
2. Its JSON escaping, compared with the hooks that do run here. The escape function's if/elseif chain is
   read from the parse tree, rule by rule (condition → what it appends). Only the handful of rule shapes
   the script uses are understood; any other shape fails the test rather than being guessed at, so the
   comparison is of the rules as written, not of a re-implementation. Those rules are applied to tricky
   strings (as UTF-16 code units, as .NET holds them) and the result must be byte-identical to what the
   bash, zsh and fish hooks' own escape functions write for the same strings. Invalid UTF-8 is left out:
   a PowerShell string cannot hold it (the other hooks' \\u00XX for a bad byte has no counterpart).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import tree_sitter as ts
import tree_sitter_powershell as tsp

from nexusmem.install import shell_hooks

SCRIPT = shell_hooks.hook_script("pwsh")
ROOT = Path(__file__).resolve().parent.parent


def parse(source: bytes) -> object:
    return ts.Parser(ts.Language(tsp.language())).parse(source)


def problems(source: bytes) -> list[str]:
    """Every ERROR or MISSING node, as 'line:column type'."""
    found: list[str] = []
    stack = [parse(source).root_node]  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            found.append(f"{node.start_point[0] + 1}:{node.start_point[1] + 1} {node.type}")
        stack.extend(node.children)
    return found


def test_the_script_parses_with_a_real_powershell_grammar() -> None:
    assert problems(SCRIPT.read_bytes()) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"if ($c -eq '\"')", b"if ($c -eq '\"'"),  # an unclosed parenthesis
        (b"catch { }", b"catch { "),  # an unclosed block
        (b"'shell-history.jsonl'", b"'shell-history.jsonl"),  # an unterminated string
    ],
)
def test_a_planted_syntax_error_is_caught(old: bytes, new: bytes) -> None:
    source = SCRIPT.read_bytes()
    assert old in source
    assert problems(source.replace(old, new, 1)), "the grammar check missed a syntax error"


# --- the escape rules, read from the parse tree -----------------------------------------------------

Rule = tuple[Callable[[int], bool], Callable[[list[int], int], tuple[str, int]]]


def _ps_string(literal: str) -> str:
    assert literal.startswith("'") and literal.endswith("'"), literal
    return literal[1:-1].replace("''", "'")


def _condition(text: str) -> Callable[[int], bool]:
    if m := re.fullmatch(r"\$c -eq ('(?:[^']|'')*')", text):
        char = _ps_string(m.group(1))
        return lambda unit: chr(unit) == char
    if m := re.fullmatch(r"\$code -eq (\d+)", text):
        number = int(m.group(1))
        return lambda unit: unit == number
    if m := re.fullmatch(r"\$code -lt (\d+)", text):
        number = int(m.group(1))
        return lambda unit: unit < number
    if text == "[char]::IsSurrogate($c)":
        return lambda unit: 0xD800 <= unit <= 0xDFFF
    raise AssertionError(f"the checker does not understand this escape condition: {text!r}")


SURROGATE_BODY = (
    "if ([char]::IsHighSurrogate($c) -and $i + 1 -lt $text.Length -and [char]::IsLowSurrogate($text[$i + 1]))"
    " { [void]$sb.Append($c).Append($text[$i + 1]) $i++ } else { [void]$sb.AppendFormat('\\u{0:x4}', $code) }"
)


def _action(text: str) -> Callable[[list[int], int], tuple[str, int]]:
    body = " ".join(text.strip().removeprefix("{").removesuffix("}").split())
    if m := re.fullmatch(r"\[void\]\$sb\.Append\(('(?:[^']|'')*')\)", body):
        literal = _ps_string(m.group(1))
        return lambda units, i: (literal, i + 1)
    if body == "[void]$sb.AppendFormat('\\u{0:x4}', $code)":
        return lambda units, i: (f"\\u{units[i]:04x}", i + 1)
    if body == "[void]$sb.Append($c)":
        return lambda units, i: (chr(units[i]), i + 1)
    if body == SURROGATE_BODY:

        def pair(units: list[int], i: int) -> tuple[str, int]:
            high, low = units[i], units[i + 1] if i + 1 < len(units) else 0
            if 0xD800 <= high <= 0xDBFF and 0xDC00 <= low <= 0xDFFF:
                return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), i + 2
            return f"\\u{high:04x}", i + 1

        return pair
    raise AssertionError(f"the checker does not understand this escape action: {body!r}")


def escape_rules() -> list[Rule]:
    """(condition, action) for each branch of __nexusmem_escape's if/elseif/else chain, in order."""
    tree = parse(SCRIPT.read_bytes())
    stack = [tree.root_node]  # type: ignore[attr-defined]
    function = None
    while stack and function is None:
        node = stack.pop()
        if node.type == "function_statement" and any(
            c.type == "function_name" and c.text == b"global:__nexusmem_escape" for c in node.children
        ):
            function = node
        stack.extend(node.children)
    assert function is not None, "no __nexusmem_escape function in the script"
    stack, chain = [function], None
    while stack and chain is None:
        node = stack.pop()
        if node.type == "if_statement":
            chain = node
        stack.extend(reversed(node.children))
    assert chain is not None
    rules: list[Rule] = []

    def branch(node: object) -> None:
        kids = node.children  # type: ignore[attr-defined]
        cond = next((c for c in kids if c.type == "pipeline"), None)
        block = next(c for c in kids if c.type == "statement_block")
        test = _condition(cond.text.decode()) if cond is not None else (lambda unit: True)
        rules.append((test, _action(block.text.decode())))

    branch(chain)
    for kid in chain.children:  # type: ignore[attr-defined]
        if kid.type == "elseif_clauses":
            for clause in kid.children:
                branch(clause)
        elif kid.type == "else_clause":
            branch(kid)
    return rules


def ps1_escape(text: str) -> bytes:
    """What the script's rules write for TEXT (as UTF-16 code units), UTF-8 encoded as the script writes."""
    data = text.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    rules, out, i = escape_rules(), [], 0
    while i < len(units):
        action = next(act for test, act in rules if test(units[i]))
        piece, i = action(units, i)
        out.append(piece)
    return "".join(out).encode("utf-8")


CALL = {
    "bash": ["bash", "--norc", "--noprofile", "-i", "-c"],
    "zsh": ["zsh", "-f", "-i", "-c"],
    "fish": ["fish", "--no-config", "-i", "-c"],
}
BODY = {
    "bash": '. "$NX_SCRIPT"; __nexusmem_escape "$NX_IN"; printf "%s" "$__nexusmem_json"',
    "zsh": '. "$NX_SCRIPT"; __nexusmem_escape "$NX_IN"; printf "%s" "$__nexusmem_json"',
    "fish": 'source "$NX_SCRIPT"; printf "%s" (__nexusmem_escape "$NX_IN")',
}
TRICKY = [
    "echo \"double\" 'single'",
    "back\\slash C:\\Users\\x \\n literally",
    "tab\there\nnewline\r\nCRLF",
    "bell\x07 esc\x1b[31m unit\x1f del\x7f",
    "caf\u00e9 \u65e5\u672c\u8a9e \U0001f600 \u200b zero-width",
    "{\"json\": [1, 2]} $HOME `backtick` 'it''s'",
]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize("text", TRICKY)
def test_ps1_escaping_matches_the_other_hooks(shell: str, text: str, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    script = shell_hooks.hook_script(shell)
    env = dict(os.environ, NX_IN=text, NX_SCRIPT=str(script), HOME=str(tmp_path))
    env["NEXUSMEM_HOME"] = str(tmp_path / ".nexusmem")
    proc = subprocess.run(
        [*CALL[shell], BODY[shell]], env=env, capture_output=True, timeout=30, check=False, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout, f"{shell} wrote nothing: {proc.stderr!r}"
    assert ps1_escape(text) == proc.stdout


def test_the_rule_reader_notices_a_changed_rule() -> None:
    """A sanity check of the checker: a ps1 that forgot to escape tabs differs from the other hooks."""
    assert ps1_escape("a\tb") == b"a\\tb"
    rules = escape_rules()
    assert len(rules) == 8
    assert _condition("$code -eq 9")(9) and not _condition("$code -lt 32")(32)
    with pytest.raises(AssertionError, match="does not understand"):
        _condition("$c -match '[\\t]'")
