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


def python(text: str) -> list[Spec]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out: list[Spec] = []
    for node in ast.walk(tree):
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
