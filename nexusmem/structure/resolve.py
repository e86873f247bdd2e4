"""Import specifiers → tracked files. "A missed edge over a wrong edge": a specifier that could name more
than one tracked file, a package from outside the repository or a standard-library module gives no edge.

- Python: module names from the package chain (directories with `__init__.py`), the path from the root and
  the path below a `src/`-like folder; a bare name only from the importer's own folder or the root (its
  sys.path[0]); relative imports by level; `from M import n` also reaches the submodule `M.n`; standard
  library names never resolve to a tracked file.
- JS/TS: relative specifiers only (`./x`, `../x`): the file, + an extension, `/index` + an extension, and
  `./x.js` → `x.ts` (TypeScript's ESM style). Bare package names and tsconfig paths give nothing.
- Go: import paths under a tracked go.mod's module path → the non-test `.go` files of that folder.
- Rust: `mod x;` → `x.rs` or `x/mod.rs` beside the module; `use crate::|self::|super::a::b` → the longest
  prefix that is a module file. Other crates give nothing.
- Java: `import a.b.C` → the one tracked file ending in `a/b/C.java`; `a.b.*` → the `.java` files of the
  one folder ending in `a/b`.
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nexusmem.structure.parse import Spec

# A wildcard or package import reaching more files than this names a whole library, not a dependency.
MAX_TARGETS_PER_SPEC = 50
_SRC_DIRS = ("src", "lib", "python", "py")
# The order an extensionless import is tried in, as its own tool resolves it: TypeScript's for a TypeScript
# importer (`.ts`, `.tsx`, then the declaration file `.d.ts`, and JavaScript last: a type test of a package
# that ships `main.js` with `main.d.ts` checks the `.d.ts`); Node's for a JavaScript one, where a
# declaration file is never the code that runs (`require('../lib/main')` runs `lib/main.js`) and is the
# target only when nothing else is.
_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_JS_FIRST = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".d.ts")
_JS_IMPORTERS = (".js", ".jsx", ".mjs", ".cjs")
# Changed when the same files and imports resolve to other edges: a store's edges from an older resolver are
# then made again in full at the next pass (structure.scan).
RESOLVER = "3"
_JS_SWAP = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__future__"}


def _dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _join(base: str, rel: str) -> str:
    return f"{base}/{rel}" if base and rel else base or rel


class Resolver:
    """Indexes of the tracked files, built once per pass."""

    def __init__(self, files: Iterable[str], specs: Mapping[str, Sequence[Spec]]) -> None:
        self.files = set(files)
        self.dirs: dict[str, list[str]] = {}
        for f in self.files:
            self.dirs.setdefault(_dir(f), []).append(f)
        self.py: dict[str, set[str]] = {}
        for f in self.files:
            if f.endswith((".py", ".pyi")):
                for name in self._py_names(f):
                    self.py.setdefault(name, set()).add(f)
        self.gomods = sorted(
            ((spec[1], _dir(f)) for f, ss in specs.items() for spec in ss if spec[0] == "gomod"),
            key=lambda m: -len(m[0]),
        )
        self.java: dict[str, set[str]] = {}
        self.java_dirs: dict[str, set[str]] = {}
        for f in self.files:
            if f.endswith(".java"):
                parts = f[: -len(".java")].split("/")
                for i in range(len(parts)):
                    self.java.setdefault("/".join(parts[i:]), set()).add(f)
                    if i < len(parts) - 1:
                        self.java_dirs.setdefault("/".join(parts[i:-1]), set()).add(_dir(f))

    # Python -----------------------------------------------------------------------------------------
    def _py_names(self, f: str) -> list[str]:
        stem = f.rsplit(".", 1)[0]
        parts = stem.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names: list[str] = []
        # The package chain: climb while the folder is a package.
        chain = [parts[-1]] if parts else []
        d = _dir(f)
        if f.endswith(("/__init__.py", "/__init__.pyi")) or f in ("__init__.py",):
            d = _dir(d)
        while d and (f"{d}/__init__.py" in self.files or f"{d}/__init__.pyi" in self.files):
            chain.insert(0, d.rsplit("/", 1)[-1])
            d = _dir(d)
        if len(chain) > 1 or d == "":
            names.append(".".join(chain))
        if parts:
            names.append(".".join(parts))
            if parts[0] in _SRC_DIRS and len(parts) > 1:
                names.append(".".join(parts[1:]))
        return list(dict.fromkeys(n for n in names if n))

    def _py_module(self, name: str, importer: str) -> str | None:
        if not name or name.split(".")[0] in _STDLIB:
            return None
        rel = name.replace(".", "/")
        here = _dir(importer)
        # A script's or test's own folder is its sys.path[0]; a package module's folder is not (Python 3 has
        # no implicit relative imports), and the root is the usual working directory.
        in_package = f"{_join(here, '__init__.py')}" in self.files if here else False
        for base in ("",) if in_package else (here, ""):
            for cand in (
                f"{_join(base, rel)}.py",
                f"{_join(base, rel)}/__init__.py",
                f"{_join(base, rel)}.pyi",
            ):
                if cand in self.files and cand != importer:
                    return cand
        found = self.py.get(name, set()) - {importer}
        if len(found) != 1:
            return None
        (only,) = found
        # A single bare name is a top-level module: only trusted when it is one ("utils" in some folder of
        # scripts is not the `utils` an installed package imports).
        home = _dir(_dir(only)) if only.endswith(("/__init__.py", "/__init__.pyi")) else _dir(only)
        return only if "." in name or home in ("", *_SRC_DIRS) else None

    def _py_relative(self, level: int, module: str, importer: str) -> str | None:
        base = _dir(importer)
        for _ in range(level - 1):
            if not base:
                return None
            base = _dir(base)
        rel = _join(base, module.replace(".", "/"))
        for cand in (f"{rel}.py", f"{rel}/__init__.py", f"{rel}.pyi", f"{rel}/__init__.pyi"):
            if cand in self.files and cand != importer:
                return cand
        return None

    def python(self, spec: Spec, importer: str) -> list[str]:
        """`import M` → M; `from M import a, b` → the submodules M.a, M.b that are files, else M itself
        (a, b are then names defined in M)."""
        _, level, module, names = spec
        if level:
            subs = [self._py_relative(level, f"{module}.{n}" if module else n, importer) for n in names]
            found = [s for s in subs if s]
            if found:
                return found
            target = self._py_relative(level, module, importer)
            return [target] if target else []
        subs = [self._py_module(f"{module}.{n}", importer) for n in names] if module else []
        found = [s for s in subs if s]
        if found:
            return found
        target = self._py_module(module, importer)
        return [target] if target else []

    # JS / TS ----------------------------------------------------------------------------------------
    def javascript(self, spec: Spec, importer: str) -> list[str]:
        target = spec[1]
        if not target.startswith(("./", "../")) and target not in (".", ".."):
            return []
        path = posixpath.normpath(_join(_dir(importer), target))
        if path.startswith("../") or path == "..":
            return []
        path = "" if path == "." else path
        exts = _JS_FIRST if importer.endswith(_JS_IMPORTERS) else _JS_EXTS
        cands = [path, *(path + e for e in exts), *(_join(path, "index") + e for e in exts)]
        stem, ext = posixpath.splitext(path)
        cands += [stem + e for e in _JS_SWAP.get(ext, ())]
        for cand in cands:
            if cand in self.files and cand != importer:
                return [cand]
        return []

    # Go ---------------------------------------------------------------------------------------------
    def go(self, spec: Spec, importer: str) -> list[str]:
        path = spec[1]
        for module, moddir in self.gomods:
            if path == module or path.startswith(module + "/"):
                folder = _join(moddir, path[len(module) + 1 :])
                found = sorted(
                    f
                    for f in self.dirs.get(folder, ())
                    if f.endswith(".go") and not f.endswith("_test.go") and f != importer
                )
                return found if len(found) <= MAX_TARGETS_PER_SPEC else []
        return []

    # Rust -------------------------------------------------------------------------------------------
    @staticmethod
    def _rs_module_dir(f: str) -> str:
        name = f.rsplit("/", 1)[-1]
        return _dir(f) if name in ("lib.rs", "main.rs", "mod.rs") else f[: -len(".rs")]

    def _rs_file(self, base: str, segs: Sequence[str]) -> str | None:
        rel = _join(base, "/".join(segs))
        for cand in (f"{rel}.rs", f"{rel}/mod.rs"):
            if cand in self.files:
                return cand
        return None

    def _rs_crate_root(self, f: str) -> str | None:
        d = _dir(f)
        while True:
            if f"{_join(d, 'lib.rs')}" in self.files or f"{_join(d, 'main.rs')}" in self.files:
                return d
            if not d:
                return None
            d = _dir(d)

    def rust(self, spec: Spec, importer: str) -> list[str]:
        if spec[1] == "mod":
            target = self._rs_file(self._rs_module_dir(importer), [spec[2]])
            return [target] if target and target != importer else []
        segs = [s for s in spec[2].split("::") if s]
        if not segs:
            return []
        if segs[0] == "crate":
            base = self._rs_crate_root(importer)
            segs = segs[1:]
        elif segs[0] in ("self", "super"):
            base = self._rs_module_dir(importer)
            while segs and segs[0] in ("self", "super"):
                if segs[0] == "super":
                    if not base:
                        return []
                    base = _dir(base)
                segs = segs[1:]
        else:
            return []
        if base is None:
            return []
        for i in range(len(segs), 0, -1):
            target = self._rs_file(base, segs[:i])
            if target:
                return [target] if target != importer else []
        return []

    # Java -------------------------------------------------------------------------------------------
    def java_import(self, spec: Spec, importer: str) -> list[str]:
        _, name, static = spec
        parts = name.split(".")
        if parts[-1] == "*":
            parts = parts[:-1]
            if static:  # import static a.b.C.*: the class C
                found = self.java.get("/".join(parts), set())
                return sorted(found - {importer}) if len(found) == 1 else []
            dirs = self.java_dirs.get("/".join(parts), set())
            if len(dirs) != 1:
                return []
            (folder,) = dirs
            files = sorted(f for f in self.dirs.get(folder, ()) if f.endswith(".java") and f != importer)
            return files if len(files) <= MAX_TARGETS_PER_SPEC else []
        if static:
            parts = parts[:-1]
        # Nested classes (a.b.C.Inner): the longest prefix that is a file.
        for i in range(len(parts), 1, -1):
            found = self.java.get("/".join(parts[:i]), set())
            if found:
                return sorted(found - {importer}) if len(found) == 1 else []
        return []

    def targets(self, importer: str, spec: Spec) -> list[str]:
        kind = spec[0] if spec else None
        if kind == "py":
            return self.python(spec, importer)
        if kind == "js":
            return self.javascript(spec, importer)
        if kind == "go":
            return self.go(spec, importer)
        if kind == "rs":
            return self.rust(spec, importer)
        if kind == "java":
            return self.java_import(spec, importer)
        return []


def edges(
    files: Iterable[str],
    specs: Mapping[str, Sequence[Spec]],
    *,
    all_specs: Mapping[str, Sequence[Any]] | None = None,
) -> set[tuple[str, str]]:
    """(importer, imported) pairs among FILES for the importers in SPECS (ALL_SPECS, when given, is every
    file's: the resolver reads the go.mod files from it)."""
    resolver = Resolver(files, specs if all_specs is None else all_specs)
    out: set[tuple[str, str]] = set()
    for importer, ss in specs.items():
        if importer not in resolver.files:
            continue
        for spec in ss:
            for target in resolver.targets(importer, spec):
                if target != importer:
                    out.add((importer, target))
    return out
