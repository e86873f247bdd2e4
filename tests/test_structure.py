"""Import structure on real repositories in temp dirs, one per language: edges, tracked files only,
incremental passes, scan-structure, and precheck's warning about a staged file's importers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from nexusmem import precheck, sync
from nexusmem.paths import db_path, shell_log_path
from nexusmem.store.db import open_store

from helpers import commit, git, run_cli

DAY_MS = 86_400_000


def edges(repo: Path) -> set[tuple[str, str]]:
    with open_store(db_path(repo)) as store:
        return store.import_edges()


PYTHON = {
    "src/shop/__init__.py": "",
    "src/shop/cart.py": "import json\nfrom .pricing import total\nfrom . import extra\nfrom typing import Any\n",
    "src/shop/pricing.py": "from shop.util import rnd\nfrom shop import taxes\n",
    "src/shop/util.py": "def rnd(x):\n    return round(x, 2)\n",
    "src/shop/taxes.py": "RATE = 0.2\n",
    "tests/test_cart.py": "from shop.cart import Cart\nimport helpers\nimport logging\n",
    "tests/helpers.py": "import os\n",
    "logging.py": "# shadows nothing: `import logging` is the standard library's\n",
    "scripts/tool.py": "import yaml\nimport util\n",
    "scripts/broken.py": "from shop import (\n",  # a syntax error: no edges, no crash
}


def test_python_edges_resolve_against_tracked_files_only(repo: Path) -> None:
    commit(repo, "python project", PYTHON)
    (repo / "src/shop/extra.py").write_text("X = 1\n", encoding="utf-8")  # untracked: never a target
    sync.sync(repo, embed=False)
    assert edges(repo) == {
        ("src/shop/cart.py", "src/shop/pricing.py"),
        ("src/shop/cart.py", "src/shop/__init__.py"),  # `from . import extra`: extra is untracked
        ("src/shop/pricing.py", "src/shop/util.py"),
        ("src/shop/pricing.py", "src/shop/taxes.py"),  # a submodule: not the package
        ("tests/test_cart.py", "src/shop/cart.py"),
        ("tests/test_cart.py", "tests/helpers.py"),
    }


def test_js_and_ts_relative_imports(repo: Path) -> None:
    commit(
        repo,
        "ts project",
        {
            "src/index.ts": (
                "import { a } from './a'\nimport b from \"./lib/b.js\"\nimport React from 'react'\n"
                "// import ghost from './ghost'\nexport { c } from './c'\n"
            ),
            "src/a.ts": "export * from './c'\nexport const a = 1\n",
            "src/lib/b.ts": "import type { T } from '../types'\nexport default 2\n",
            "src/types.d.ts": "export type T = number\n",
            "src/c/index.ts": "export const c = 3\n",
            "src/d.js": "const a = require('./a')\nconst lazy = () => import('./lib/b')\n",
            "src/ghost.ts": "export const g = 1\n",
            "web/app.jsx": "import '../src/d.js'\nimport x from '../../outside'\n",
        },
    )
    sync.sync(repo, embed=False)
    assert edges(repo) == {
        ("src/index.ts", "src/a.ts"),
        ("src/index.ts", "src/lib/b.ts"),
        ("src/index.ts", "src/c/index.ts"),
        ("src/a.ts", "src/c/index.ts"),
        ("src/lib/b.ts", "src/types.d.ts"),
        ("src/d.js", "src/a.ts"),
        ("src/d.js", "src/lib/b.ts"),
        ("web/app.jsx", "src/d.js"),
    }


def test_go_imports_reach_the_package_files(repo: Path) -> None:
    commit(
        repo,
        "go project",
        {
            "go.mod": "module example.com/app\n\ngo 1.22\n",
            "main.go": 'package main\n\nimport (\n\t"fmt"\n\tst "example.com/app/internal/store"\n)\n',
            "internal/store/store.go": "package store\n",
            "internal/store/store_test.go": 'package store\n\nimport "testing"\n',
            "internal/store/cache.go": 'package store\n\nimport "example.com/app/internal/util"\n',
            "internal/util/util.go": 'package util\n\n// import "example.com/app/ghost"\n',
            "tools/go.mod": "module example.com/tools\n",
            "tools/gen.go": 'package main\n\nimport "example.com/tools/lib"\nimport "github.com/x/y"\n',
            "tools/lib/lib.go": "package lib\n",
        },
    )
    sync.sync(repo, embed=False)
    assert edges(repo) == {
        ("main.go", "internal/store/store.go"),
        ("main.go", "internal/store/cache.go"),
        ("internal/store/cache.go", "internal/util/util.go"),
        ("tools/gen.go", "tools/lib/lib.go"),
    }


def test_rust_mods_and_use_paths(repo: Path) -> None:
    commit(
        repo,
        "rust project",
        {
            "Cargo.toml": '[package]\nname = "app"\nversion = "0.1.0"\n',
            "src/main.rs": (
                "mod net;\nmod util;\nuse crate::net::client::Client;\nuse serde::Serialize;\n"
                "use crate::{util::helper as h, net};\nfn main() {}\n"
            ),
            "src/net/mod.rs": "pub mod client;\n",
            "src/net/client.rs": "use super::super::util::helper;\nuse std::io;\npub struct Client;\n",
            "src/util.rs": "pub fn helper() {}\n",
        },
    )
    sync.sync(repo, embed=False)
    assert edges(repo) == {
        ("src/main.rs", "src/net/mod.rs"),
        ("src/main.rs", "src/util.rs"),
        ("src/main.rs", "src/net/client.rs"),
        ("src/net/mod.rs", "src/net/client.rs"),
        ("src/net/client.rs", "src/util.rs"),
    }


def test_java_imports_by_package_path(repo: Path) -> None:
    base = "src/main/java/com/acme"
    commit(
        repo,
        "java project",
        {
            f"{base}/App.java": (
                "package com.acme;\nimport com.acme.db.Store;\nimport java.util.List;\n"
                "import static com.acme.util.Strings.trim;\nimport com.acme.model.*;\n"
                "/* import com.acme.ghost.Ghost; */\nclass App {}\n"
            ),
            f"{base}/db/Store.java": "package com.acme.db;\nimport com.acme.model.User;\nclass Store {}\n",
            f"{base}/util/Strings.java": "package com.acme.util;\nclass Strings {}\n",
            f"{base}/model/User.java": "package com.acme.model;\nclass User {}\n",
            f"{base}/model/Order.java": "package com.acme.model;\nclass Order {}\n",
            f"{base}/ghost/Ghost.java": "package com.acme.ghost;\nclass Ghost {}\n",
        },
    )
    sync.sync(repo, embed=False)
    assert edges(repo) == {
        (f"{base}/App.java", f"{base}/db/Store.java"),
        (f"{base}/App.java", f"{base}/util/Strings.java"),
        (f"{base}/App.java", f"{base}/model/User.java"),
        (f"{base}/App.java", f"{base}/model/Order.java"),
        (f"{base}/db/Store.java", f"{base}/model/User.java"),
    }


def test_passes_are_incremental(repo: Path) -> None:
    commit(repo, "python project", PYTHON)
    first = sync.sync(repo, embed=False).structure
    assert first is not None and len(first.parsed) == len(PYTHON)
    again = sync.sync(repo, embed=False).structure
    assert again is not None and again.parsed == [] and not again.add and not again.remove
    # One file changes: only it is parsed again.
    commit(repo, "cart drops pricing", {"src/shop/cart.py": "from shop.taxes import RATE\n"})
    step = sync.sync(repo, embed=False).structure
    assert step is not None and [p for p, _b, _s in step.parsed] == ["src/shop/cart.py"]
    assert step.add == {("src/shop/cart.py", "src/shop/taxes.py")}
    assert step.remove == {
        ("src/shop/cart.py", "src/shop/pricing.py"),
        ("src/shop/cart.py", "src/shop/__init__.py"),
    }
    # A new file makes an old, unparsed import resolvable; a deleted one takes its edges along.
    commit(repo, "add yaml shim", {"yaml.py": "X = 1\n"})
    git(repo, "rm", "-q", "tests/helpers.py")
    git(repo, "commit", "-q", "-m", "drop helpers")
    step = sync.sync(repo, embed=False).structure
    assert step is not None and [p for p, _b, _s in step.parsed] == ["yaml.py"]
    assert step.add == {("scripts/tool.py", "yaml.py")}
    assert step.remove == {("tests/test_cart.py", "tests/helpers.py")}


def test_a_secret_in_a_file_name_is_stored_redacted_and_not_read_again(repo: Path) -> None:
    """`keys/AKIA….py` and the import naming it are kept redacted (as every path memory keeps), the edge
    still resolves, and the next pass finds the file unchanged instead of reading it again each sync."""
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    commit(repo, "keys", {f"keys/{secret}.py": "X = 1\n", "app.py": f"from keys import {secret}\n"})
    first = sync.sync(repo, embed=False).structure
    assert first is not None and len(first.parsed) == 2
    assert edges(repo) == {("app.py", "keys/«redacted:aws-key».py")}
    assert not [f for f in db_path(repo).parent.glob("memory.db*") if secret.encode() in f.read_bytes()]
    again = sync.sync(repo, embed=False).structure
    assert again is not None and again.parsed == [] and not again.add and not again.remove


def test_scan_structure_previews_and_writes_nothing(repo: Path) -> None:
    commit(repo, "python project", PYTHON)
    run_cli("-C", str(repo), "init")
    preview = json.loads(run_cli("-C", str(repo), "scan-structure", "--json").stdout)
    assert preview["parsed"] == len(PYTHON) and ["tests/test_cart.py", "src/shop/cart.py"] in preview["added"]
    assert edges(repo) == set()
    text = run_cli("-C", str(repo), "scan-structure").stdout
    assert "+ tests/test_cart.py → src/shop/cart.py" in text and "Nothing was written." in text
    run_cli("-C", str(repo), "sync", "--no-embed")
    after = json.loads(run_cli("-C", str(repo), "scan-structure", "--json").stdout)
    assert (after["parsed"], after["added"], after["removed"], after["edges"]) == (0, [], [], 6)


def _fail(repo: Path, command: str, ago: int, folder: str = "") -> None:
    path = shell_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    now = int(time.time() * 1000)
    line = {
        "ts": now - ago,
        "cwd": str(repo / folder),
        "exit": 1,
        "command": command,
        "shell": "bash",
        "session": "s",
        "v": 1,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def test_precheck_warns_when_a_staged_files_importers_failed(repo: Path) -> None:
    commit(repo, "python project", {**PYTHON, "tests/test_checkout.py": "from shop.pricing import total\n"})
    _fail(repo, "pytest tests/test_checkout.py", 2 * DAY_MS)
    sync.sync(repo, embed=False)
    (repo / "src/shop/pricing.py").write_text("from shop.util import rnd\n# faster\n", encoding="utf-8")
    (repo / "src/shop/taxes.py").write_text("RATE = 0.21\n", encoding="utf-8")
    git(repo, "add", "-A")
    result = run_cli("-C", str(repo), "precheck")
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 2 * 86400))
    assert (
        f"src/shop/pricing.py: imported by tests/test_checkout.py, whose `pytest tests/test_checkout.py` failed"
        f" (exit 1) on {day} and was never seen passing — run it before committing"
    ) in result.stderr
    assert "src/shop/taxes.py" not in result.stderr  # nothing that imports it failed
    found = precheck.run(repo, files=["src/shop/pricing.py"])
    (warning,) = found.findings
    assert (warning.kind, warning.importer) == ("importer_failure", "tests/test_checkout.py")
    assert found.to_json()["findings"][0]["importer"] == "tests/test_checkout.py"


def test_a_javascript_require_reaches_the_code_not_its_type_declarations(repo: Path) -> None:
    """`require('../lib/main')` beside `lib/main.d.ts` (a package that ships its types, as dotenv does) was
    resolved to the declaration file: a failing test of lib/main.js never warned when lib/main.js was staged."""
    commit(
        repo,
        "js package with types",
        {
            "lib/main.js": "module.exports = { parse() {} }\n",
            "lib/main.d.ts": "export function parse(): void\n",
            "tests/main.test.js": "const main = require('../lib/main')\n",
            "types/use.ts": "import { parse } from '../lib/main'\n",
        },
    )
    _fail(repo, "node tests/main.test.js", 2 * DAY_MS)
    sync.sync(repo, embed=False)
    assert ("tests/main.test.js", "lib/main.js") in edges(repo)
    # TypeScript reads the declaration file (a type test of the package checks lib/main.d.ts), as tsc does.
    assert ("types/use.ts", "lib/main.d.ts") in edges(repo)
    (warning,) = precheck.run(repo, files=["lib/main.js"]).findings
    assert (warning.kind, warning.importer) == ("importer_failure", "tests/main.test.js")
    # A store whose edges the older resolver made gets them made again at the next sync, nothing changed.
    with open_store(db_path(repo)) as store:
        with store.transaction():
            store.change_import_edges(
                {("tests/main.test.js", "lib/main.d.ts")}, {("tests/main.test.js", "lib/main.js")}
            )
        store.set_meta("structure_resolver", "1")
    sync.sync(repo, embed=False)
    assert ("tests/main.test.js", "lib/main.js") in edges(repo)
    assert ("tests/main.test.js", "lib/main.d.ts") not in edges(repo)


def test_an_importers_failure_says_the_folder_its_command_ran_in(repo: Path) -> None:
    """`node ../tests/util.test.js` run in lib/ failed: the warning for tests/util.test.js said "in lib", the
    one for lib/util.js (which it imports) said only "whose `node ../tests/util.test.js` failed", a command
    that cannot be run from the top, where the hook runs. Both say where it ran."""
    commit(
        repo,
        "js util and its test",
        {
            "lib/util.js": "module.exports = { pad() {} }\n",
            "tests/util.test.js": "const util = require('../lib/util')\n",
        },
    )
    _fail(repo, "node ../tests/util.test.js", 2 * DAY_MS, folder="lib")
    sync.sync(repo, embed=False)
    (repo / "lib/util.js").write_text("module.exports = { pad() { return 1 } }\n", encoding="utf-8")
    (repo / "tests/util.test.js").write_text("const util = require('../lib/util') // pad\n", encoding="utf-8")
    git(repo, "add", "lib/util.js")
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 2 * 86400))
    said = run_cli("-C", str(repo), "precheck").stderr
    assert (
        f"lib/util.js: imported by tests/util.test.js, whose `node ../tests/util.test.js` in lib failed (exit 1)"
        f" on {day} and was never seen passing — run it before committing"
    ) in said, said
    git(repo, "add", "tests/util.test.js")
    said = run_cli("-C", str(repo), "precheck").stderr
    assert f"tests/util.test.js: `node ../tests/util.test.js` in lib failed (exit 1) on {day}" in said, said


def test_precheck_reads_an_old_store_without_import_tables(repo: Path) -> None:
    from nexusmem.store import connection, migrations

    commit(repo, "python project", PYTHON)
    path = db_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connection.connect(path)
    migrations.migrate(conn, target=7)
    conn.close()
    (repo / ".nexusmem" / "config.json").write_text("{}", encoding="utf-8")
    found = precheck.run(repo, files=["src/shop/pricing.py"])
    assert found.checked and found.findings == []


@pytest.mark.parametrize("text", ["\0\0binary", "x" * 10])
def test_unparseable_files_give_no_edges(repo: Path, text: str) -> None:
    commit(repo, "odd", {"a.py": text, "b.py": "import a\n"})
    sync.sync(repo, embed=False)
    assert edges(repo) == {("b.py", "a.py")}
