"""The structure pass: parse what changed, resolve every file's imports, store the difference.

Incremental by blob: `git ls-files -s` gives each tracked file's staged blob; only files whose blob differs
from the one stored are read (one `git cat-file --batch` per 500 files) and parsed. Resolution then runs over
every file's stored specifiers, because a file added elsewhere can make an old import resolvable (a few ms
per thousand files: dictionary lookups). Only the edges that changed are written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nexusmem import gitcmd
from nexusmem.nodes import rewritten, strings_in
from nexusmem.redact import path_text, redact, redact_path
from nexusmem.structure import parse, resolve

READ_BATCH = 500


@dataclass
class StructurePlan:
    """What a pass found: files to (re)parse, files gone, and the edges to add and remove."""

    files: int = 0  # tracked source files (and go.mod)
    parsed: list[tuple[str, str, list[Any]]] = field(default_factory=list)  # (path, blob, specs)
    removed: list[str] = field(default_factory=list)
    add: set[tuple[str, str]] = field(default_factory=set)
    remove: set[tuple[str, str]] = field(default_factory=set)
    edges: int = 0  # edges after the pass
    skipped: int = 0  # too large or unreadable: stored without imports, so not read again
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "parsed": len(self.parsed),
            "removed_files": len(self.removed),
            "edges": self.edges,
            "added": sorted(self.add),
            "removed": sorted(self.remove),
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }

    def describe(self) -> str:
        return (
            f"structure: {self.files} source file(s), {len(self.parsed)} parsed, {self.edges} import edge(s)"
            f" (+{len(self.add)} -{len(self.remove)})" + (f", {self.skipped} skipped" if self.skipped else "")
        )


def tracked(root: Path) -> dict[str, str]:
    """{path: staged blob sha} of the tracked regular files in a language we parse."""
    out = gitcmd.run(["ls-files", "-s", "-z"], root)
    found: dict[str, str] = {}
    for entry in out.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        parts = meta.split()
        if not raw or len(parts) < 2 or not parts[0].startswith(b"100"):
            continue
        path = raw.decode("utf-8", "replace")
        if parse.language(path):
            found[path] = parts[1].decode("ascii")
    return found


def _read_blobs(root: Path, blobs: list[str], max_bytes: int) -> dict[str, bytes | None]:
    """{blob: content} (None when larger than MAX_BYTES or missing) through `git cat-file --batch`."""
    out: dict[str, bytes | None] = {}
    for start in range(0, len(blobs), READ_BATCH):
        chunk = blobs[start : start + READ_BATCH]
        data = gitcmd.run(["cat-file", "--batch"], root, input="".join(f"{b}\n" for b in chunk).encode())
        pos = 0
        for blob in chunk:
            end = data.find(b"\n", pos)
            if end < 0:
                break
            header = data[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[1] == b"missing":
                out[blob] = None
                continue
            size = int(header[2])
            out[blob] = data[pos : pos + size] if size <= max_bytes else None
            pos += size + 1
    return out


def _as_stored(files: dict[str, str], blobs: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(FILES keyed as the store keeps them, {stored name: real path}). A path with a secret in it
    (`config/ghp_….py`) is stored redacted, like every path memory keeps; only paths the store does not
    hold already (new ones, and those it holds redacted) are scanned, in one pass, so a no-op pass over a
    large tree redacts nothing. BLOBS: the stored {path: blob}."""
    unknown = [path for path in files if path not in blobs]
    joined = "\n".join(path_text(path) for path in unknown)
    if not unknown or redact(joined) == joined:
        return files, {}
    renamed = {path: name for path in unknown if (name := redact_path(path)) != path}
    return {renamed.get(path, path): blob for path, blob in files.items()}, {v: k for k, v in renamed.items()}


def _redact_specs(parsed: dict[str, list[Any]]) -> None:
    """Redact, in place (the lists are shared with the plan's rows), the import specifiers PARSED holds
    ({path: [["py", 0, "pkg", ["name", ...]], ...]}): one scan of them all, then each specifier's own only
    when that scan finds a secret."""
    joined = "\n".join(strings_in(list(parsed.values())))
    if not joined or redact(joined) == joined:
        return
    for specs in parsed.values():
        for spec in specs:
            spec[:] = rewritten(spec, redact)


# The store's meta key naming the resolver that made its edges (resolve.RESOLVER).
RESOLVER_KEY = "structure_resolver"


class Stored(Protocol):
    """What a pass reads of the previous one (the Store; or nothing before the first)."""

    def import_blobs(self) -> dict[str, str]: ...

    def import_specs(self, paths: Sequence[str] | None = None) -> dict[str, list[list[Any]]]: ...

    def import_edges(self, importers: Sequence[str] | None = None) -> set[tuple[str, str]]: ...

    def import_edge_total(self) -> int: ...

    def get_meta(self, key: str) -> str | None: ...


class Nothing:
    """The previous pass of a store that never had one."""

    def import_blobs(self) -> dict[str, str]:
        return {}

    def import_specs(self, paths: Sequence[str] | None = None) -> dict[str, list[list[Any]]]:
        return {}

    def import_edges(self, importers: Sequence[str] | None = None) -> set[tuple[str, str]]:
        return set()

    def import_edge_total(self) -> int:
        return 0

    def get_meta(self, key: str) -> str | None:
        return None


def plan(
    root: Path, stored: Stored, max_bytes: int, denied: Callable[[str], bool] | None = None
) -> StructurePlan:
    """What a pass would change, given what STORED holds (nothing is written here). DENIED: whether a text
    holds a forgotten value (the sync's deny-list): such a file is left out as if git did not track it, such
    an import specifier as if it were not written."""
    t0 = time.perf_counter()
    result = StructurePlan()
    blobs = stored.import_blobs()
    files, real = _as_stored(tracked(root), blobs)
    if denied is not None:
        files = {path: blob for path, blob in files.items() if not denied(path)}
    result.files = len(files)
    changed = [p for p, blob in files.items() if blobs.get(p) != blob]
    contents = _read_blobs(root, sorted({files[p] for p in changed}), max_bytes)
    parsed: dict[str, list[Any]] = {}
    for path in changed:
        raw = contents.get(files[path])
        if raw is None or b"\0" in raw[:8000]:
            result.skipped += 1
            found: list[Any] = []
        else:
            found = [list(s) for s in parse.specs(real.get(path, path), raw.decode("utf-8", "replace"))]
        parsed[path] = found
        result.parsed.append((path, files[path], found))
    _redact_specs(parsed)
    if denied is not None:
        for kept in parsed.values():  # in place: the plan's rows share the lists
            kept[:] = [spec for spec in kept if not any(denied(text) for text in strings_in([spec]))]
    result.removed = sorted(p for p in blobs if p not in files)
    same_files = not result.removed and len(blobs) == len(files)
    # Edges an older resolver made (a `require` resolved to the package's `.d.ts`) are made again in full.
    same_files = same_files and stored.get_meta(RESOLVER_KEY) == resolve.RESOLVER
    if same_files and not any(parse.language(p) == "gomod" for p in changed):
        # Resolution depends on the set of files (and go.mod), not on other files' contents: with the same
        # files, only the changed importers' edges can change, and a no-op pass resolves nothing.
        if changed:
            gomods = stored.import_specs([p for p in files if parse.language(p) == "gomod"])
            mine = stored.import_edges(changed)
            fresh = resolve.edges(
                files, {p: [tuple(s) for s in parsed[p]] for p in changed}, all_specs=gomods
            )
            result.add = fresh - mine
            result.remove = mine - fresh
        result.edges = stored.import_edge_total() - len(result.remove) + len(result.add)
    else:
        specs = {p: s for p, s in stored.import_specs().items() if p in files}
        specs.update(parsed)
        now = resolve.edges(files, {p: [tuple(s) for s in ss] for p, ss in specs.items()})
        edges = stored.import_edges()
        result.add = now - edges
        result.remove = edges - now
        result.edges = len(now)
    result.seconds = time.perf_counter() - t0
    return result


def run(
    root: Path,
    store: Any,
    config: dict[str, Any],
    *,
    dry_run: bool = False,
    denied: Callable[[str], bool] | None = None,
) -> StructurePlan:
    """Plan against STORE and, unless DRY_RUN, write the plan in one transaction (DENIED: see plan())."""
    max_bytes = int(config.get("structure", {}).get("maxFileBytes", 1_000_000))
    result = plan(root, store, max_bytes, denied)
    if dry_run:
        return result
    if result.parsed or result.removed or result.add or result.remove:
        with store.transaction():
            store.save_import_files(result.parsed, result.removed)
            store.change_import_edges(result.add, result.remove)
    if store.get_meta(RESOLVER_KEY) != resolve.RESOLVER:
        store.set_meta(RESOLVER_KEY, resolve.RESOLVER)
    return result
