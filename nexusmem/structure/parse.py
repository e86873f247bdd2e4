"""One file's import specifiers, per language. Syntax only: no file system, no resolution.

A specifier is a small tuple: ("py", level, module, names) for Python, ("js", spec) for JS/TS, ("go", path),
("rs", "mod", name) or ("rs", "use", path) for Rust, ("java", name, static) for Java. Anything that does
not parse yields nothing: a file with a syntax error has no edges, never wrong ones.
"""

from __future__ import annotations

import ast
import re
from typing import Any

Spec = tuple[Any, ...]

LANGUAGES: dict[str, str] = {
    ".py": "py",
    ".pyi": "py",
    ".js": "js",
    ".jsx": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".ts": "js",
    ".tsx": "js",
    ".mts": "js",
    ".cts": "js",
    ".go": "go",
    ".rs": "rs",
    ".java": "java",
}


def language(path: str) -> str | None:
    if path == "go.mod" or path.endswith("/go.mod"):
        return "gomod"
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot > path.rfind("/") else None


# The start of an import statement: `import a`, `from a import b` at the start of a (logical) line.
_PY_START = re.compile(r"^[ \t]*(?:import[ \t]+[\w.]|from[ \t]+[\w.]+[ \t]+import\b)", re.MULTILINE)
_PY_TRIPLE = re.compile(r'"""|\'\'\'')


def _triple_quoted(text: str) -> list[tuple[int, int]]:
    """Approximate spans of triple-quoted strings (docstrings), where "import x" is prose."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := _PY_TRIPLE.search(text, pos)) is not None:
        end = text.find(m.group(0), m.end())
        if end < 0:
            spans.append((m.start(), len(text)))
            break
        spans.append((m.start(), end + 3))
        pos = end + 3
    return spans


def python(text: str) -> list[Spec]:
    """Import statements only: each found by a line regex and parsed alone with `ast` (parsing and walking
    whole files cost 40 ms a file; this ~1 ms). A statement inside a docstring is skipped; one that does not
    parse (a line continued oddly) gives nothing."""
    out: list[Spec] = []
    spans: list[tuple[int, int]] | None = None
    for m in _PY_START.finditer(text):
        if spans is None:
            spans = _triple_quoted(text) if ('"""' in text or "'''" in text) else []
        start = m.start()
        if any(a < start < b for a, b in spans):
            continue
        # The logical line: up to the closing parenthesis, or across backslash continuations.
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if "(" in line and ")" not in line:
            close = text.find(")", end)
            end = len(text) if close < 0 else close + 1
        while text[start:end].rstrip().endswith("\\") and end < len(text):
            nxt = text.find("\n", end + 1)
            end = len(text) if nxt < 0 else nxt
        snippet = text[start:end].strip()
        try:
            tree = ast.parse(snippet)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                out.extend(("py", 0, alias.name, ()) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                names = tuple(alias.name for alias in node.names if alias.name != "*")
                out.append(("py", node.level or 0, node.module or "", names))
    return out


_JS_COMMENT = re.compile(r"/\*.*?\*/|(?<![:'\"\\])//[^\n]*", re.DOTALL)
_JS = re.compile(
    r"""(?:^|[;\s}])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"\n]+)['"]"""
    r"""|\b(?:require|import)\s*\(\s*['"]([^'"\n]+)['"]\s*\)""",
    re.MULTILINE,
)


def javascript(text: str) -> list[Spec]:
    code = _JS_COMMENT.sub(" ", text)
    return [("js", a or b) for a, b in _JS.findall(code)]


_GO_BLOCK = re.compile(r"^import\s*\((.*?)\)", re.MULTILINE | re.DOTALL)
_GO_ONE = re.compile(r'^import\s+(?:[\w.]+\s+)?"([^"]+)"', re.MULTILINE)
_GO_IN_BLOCK = re.compile(r'^\s*(?:[\w.]+\s+)?"([^"]+)"', re.MULTILINE)


def go(text: str) -> list[Spec]:
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    code = re.sub(r"//[^\n]*", "", code)
    out = [("go", p) for p in _GO_ONE.findall(code)]
    for block in _GO_BLOCK.findall(code):
        out.extend(("go", p) for p in _GO_IN_BLOCK.findall(block))
    return out


_RS_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;", re.MULTILINE)
_RS_USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.MULTILINE)


def _rust_paths(tree: str, prefix: str = "") -> list[str]:
    """'crate::a::{b, c::d}' → ['crate::a::b', 'crate::a::c::d'] (one level of braces each time)."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [prefix + re.sub(r"\bas\w+$", "", tree)]
    head, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(inner):
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    out: list[str] = []
    for part in parts:
        if part:
            out.extend(_rust_paths(part, prefix + head))
    return out


def rust(text: str) -> list[Spec]:
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    code = re.sub(r"//[^\n]*", "", code)
    out: list[Spec] = [("rs", "mod", name) for name in _RS_MOD.findall(code)]
    for tree in _RS_USE.findall(code):
        tree = re.sub(r"\s+as\s+\w+", "", tree)
        out.extend(("rs", "use", p.removesuffix("::self")) for p in _rust_paths(tree) if p)
    return out


_JAVA = re.compile(r"^\s*import\s+(static\s+)?([\w.]+(?:\.\*)?)\s*;", re.MULTILINE)


def java(text: str) -> list[Spec]:
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return [("java", name, bool(static)) for static, name in _JAVA.findall(code)]


_GOMOD = re.compile(r"^\s*module\s+\"?([^\s\"]+)", re.MULTILINE)


def gomod(text: str) -> list[Spec]:
    """go.mod: the module path its directory's packages are imported by."""
    m = _GOMOD.search(text)
    return [("gomod", m.group(1))] if m else []


PARSERS = {"py": python, "js": javascript, "go": go, "rs": rust, "java": java, "gomod": gomod}


def specs(path: str, text: str) -> list[Spec]:
    lang = language(path)
    return list(dict.fromkeys(PARSERS[lang](text))) if lang else []
