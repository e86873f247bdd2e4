"""Boundaries of the one-direction flow, and what the light paths import."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "nexusmem"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def modules_under(sub: str) -> list[Path]:
    return sorted((PKG / sub).rglob("*.py"))


def test_store_imports_nothing_above_it() -> None:
    allowed = ("nexusmem.store", "nexusmem.errors", "nexusmem.nodes", "nexusmem.identity", "nexusmem.private")
    for path in modules_under("store"):
        for name in imports_of(path):
            if name.startswith("nexusmem"):
                assert name.startswith(allowed), f"{path.name} imports {name}"


def test_sources_never_import_retrieval_cli_or_mcp() -> None:
    for path in modules_under("sources"):
        for name in imports_of(path):
            assert not name.startswith(
                ("nexusmem.retrieve", "nexusmem.cli", "nexusmem.mcp_server", "nexusmem.store")
            ), f"{path.name} imports {name}"


def test_only_store_speaks_sql() -> None:
    for path in PKG.rglob("*.py"):
        if "store" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        assert "import sqlean" not in text and "import sqlite3" not in text, f"{path} opens SQLite itself"


# An SQL statement in a string literal (docstrings, which may name SQL in prose, are left out).
SQL = re.compile(
    r"\b(?:SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (?:TABLE|INDEX|VIRTUAL TABLE|TRIGGER)|DROP TABLE"
    r"|ALTER TABLE|PRAGMA) "
)


def sql_in(source: str) -> list[int]:
    """Lines of SOURCE that run SQL (a call to .execute/.executemany/.executescript) or hold an SQL string."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    lines = []
    for node in ast.walk(tree):
        runs = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if runs and node.func.attr in ("execute", "executemany", "executescript"):
            lines.append(node.lineno)
        holds = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        if holds and SQL.search(node.value):
            lines.append(node.lineno)
    return sorted(lines)


def test_sql_appears_nowhere_outside_store() -> None:
    offenders = [
        f"{path.relative_to(PKG)}:{line}"
        for path in PKG.rglob("*.py")
        if "store" not in path.relative_to(PKG).parts
        for line in sql_in(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_sql_check_sees_sql() -> None:
    assert sql_in("rows = store.conn.execute(query)") == [1]
    assert sql_in('QUERY = "DELETE FROM links WHERE relation = ?"') == [1]
    assert (
        sql_in('def f():\n    "Runs `PRAGMA quick_check` on the file."\n    return "select the newest"') == []
    )


def test_mcp_server_never_imports_the_cli() -> None:
    """Both faces call the library; the CLI may start the server (`nexusmem mcp`), never the other way."""
    for path in (PKG / "mcp_server.py", PKG / "mcp_stdio.py"):
        for name in imports_of(path):
            assert not name.startswith("nexusmem.cli"), f"{path.name} imports {name}"


def test_ingest_never_imports_retrieval() -> None:
    ingest = [*modules_under("sources"), PKG / "sync.py", PKG / "link.py", PKG / "autosync.py"]
    for path in ingest:
        for name in imports_of(path):
            assert not name.startswith("nexusmem.retrieve"), f"{path.relative_to(PKG)} imports {name}"


def test_retrieval_and_ingest_see_the_store_through_its_protocols() -> None:
    """retrieve/, show, link and sync type their store parameters with store.interface, not the SQLite Store."""
    typed = [*modules_under("retrieve"), PKG / "show.py", PKG / "link.py", PKG / "sync.py"]
    for path in typed:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and node.arg == "store" and node.annotation is not None:
                assert ast.unparse(node.annotation) in ("SearchStore", "LinkStore", "SyncStore"), (
                    f"{path.relative_to(PKG)}:{node.lineno}: store: {ast.unparse(node.annotation)}"
                )


def test_version_imports_nothing_heavy() -> None:
    code = (
        "import sys; from nexusmem.cli.main import main; main(['--version']);"
        "heavy = [m for m in ('click', 'sqlean', 'mcp', 'numpy', 'httpx', 'wordllama', 'git', 'filelock')"
        " if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_query_path_imports_no_embedder_or_mcp(tmp_path: Path) -> None:
    code = (
        "import sys; from nexusmem.retrieve import query, vector, cjk; from nexusmem import sync, status, embed;"
        "from nexusmem.store import vectors;"
        "print([m for m in ('mcp', 'numpy', 'httpx', 'wordllama', 'git', 'sqlite_vec') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_providers_import_their_libraries_only_when_used() -> None:
    code = (
        "import sys; from nexusmem import embed; b = embed.make('builtin'); o = embed.make('ollama');"
        "print([m for m in ('numpy', 'httpx', 'wordllama', 'sqlite_vec') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_query_without_vectors_loads_no_embedder(tmp_path: Path) -> None:
    """A store without vectors answers from BM25 without importing numpy, wordllama or httpx."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "fix: flaky cache test"], check=True
    )
    code = (
        "import sys; from nexusmem import sync, project; from nexusmem.retrieve import query;"
        f"sync.sync({str(repo)!r}, embed=False); p = project.load({str(repo)!r});"
        "s = p.open_store(); r = query.run(s, 'flaky cache', project='repo'); s.close();"
        "print(len(r.items), r.vector_matched, [m for m in ('numpy', 'httpx', 'wordllama') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "1 0 []"
