"""scrub: run today's redaction rules over what is already stored, then delete the old text for good.

Sources redact at ingest, so a rule added later protects new input only; scrub brings the old nodes up to
the same standard. A backup of memory.db (mode 0600: it still holds the secrets) is taken first. The
post-commit sync's output (.nexusmem/auto-sync.log, auto-sync.failed) and the crash log get the same rules,
line by line. The copies upgrades kept of an older memory (memory.db.pre-vNN.bak) are not rewritten: the
store's code reads and writes this release's schema only, and opening one would upgrade it, so that the
release it is kept for could no longer read it; scrub and doctor say that they still hold what it removed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import autosync, crashlog, registry
from nexusmem import project as project_mod
from nexusmem.hygiene.forget import writer_lock
from nexusmem.nodes import Node, strings_in
from nexusmem.redact import RULES_KEY, RULES_VERSION, path_text, redact_counts, redact_path_counts
from nexusmem.sources.shell.node import split_title
from nexusmem.store.db import pre_upgrade_copies


@dataclass
class ScrubReport:
    dry_run: bool
    scanned: int = 0
    changed: int = 0
    secrets: dict[str, int] = field(default_factory=dict)
    backup: Path | None = None
    checkpointed: bool = True
    paths: int = 0  # distinct file paths (in nodes' file lists) redacted
    imports: bool = False  # the import structure held a secret, and is dropped (the next sync reads it again)
    cursors: list[str] = field(default_factory=list)  # sources whose cursor held a secret: dropped
    judgments: int = 0  # contradiction judgments whose model-written reason held a secret: rewritten
    # The project id, when it held a credential of the origin URL: the clean id its nodes were re-keyed to.
    project_id: str | None = None
    rekeyed: int = 0  # nodes re-keyed to it
    registry: int = 0  # projects.json entries whose id held a credential: re-keyed
    # Lines of .nexusmem/auto-sync.log and auto-sync.failed (the post-commit sync's output) that held a
    # secret: redacted in place of the old text (an older release wrote its project id there).
    sync_log: int = 0
    crash_log: int = 0  # lines of the crash log (~/.nexusmem/crash.log) that held a secret: redacted in place
    # The copies upgrades kept (schema, path) that still hold what this scrub removed (or would): left as they
    # are (see the module's docstring).
    pre_upgrade: list[tuple[int, Path]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "scanned": self.scanned,
            "changed": self.changed,
            "secrets": self.secrets,
            "paths": self.paths,
            "imports": self.imports,
            "cursors": self.cursors,
            "judgments": self.judgments,
            "project_id": self.project_id,
            "rekeyed": self.rekeyed,
            "registry": self.registry,
            "sync_log": self.sync_log,
            "crash_log": self.crash_log,
            "backup": str(self.backup) if self.backup else None,
            "pre_upgrade_unscrubbed": [str(copy) for _version, copy in self.pre_upgrade],
            "checkpointed": self.checkpointed,
        }


def unscrubbed_copy_text(version: int, copy: Path, when: str) -> str:
    """What scrub and doctor say of COPY, the copy the upgrade from schema VERSION kept, which holds what a
    scrub removed (WHEN: "this scrub removed", "`nexusmem scrub` removed at …")."""
    return (
        f"{copy}, the copy the upgrade from schema {version} kept (to go back to a release of that schema), still"
        f" holds the text {when} (secrets, transcript paths): scrub cannot rewrite a memory of an older schema"
        " without upgrading it, which would leave that release nothing to read; delete it once you no longer"
        " need to go back"
    )


def scrubbed_after(audit: list[dict[str, Any]], copy: Path) -> int | None:
    """When (epoch ms) the newest scrub recorded in AUDIT (Store.audit_log) that changed the memory ran, when
    it ran after the upgrade that kept COPY (the copy's mtime): the copy holds what it removed. None
    otherwise (no scrub since: the copy holds what the memory held)."""
    try:
        kept = copy.stat().st_mtime * 1000
    except OSError:
        return None
    after = [int(row["at"]) for row in audit if row["action"] == "scrub" and int(row["at"]) > kept]
    return max(after) if after else None


def _redact_value(value: Any, counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        text, found = redact_counts(value)
        for kind, n in found.items():
            counts[kind] = counts.get(kind, 0) + n
        return text
    if isinstance(value, dict):
        return {k: _redact_value(v, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, counts) for v in value]
    return value


def _count(found: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in found.items():
        counts[kind] = counts.get(kind, 0) + n


def _path_renames(paths: list[str], counts: dict[str, int]) -> dict[str, str]:
    """{path: redacted path} of those of PATHS that hold a secret (one scan of them all first), their
    secrets added to COUNTS."""
    joined = "\n".join(path_text(path) for path in paths)
    if not paths or redact_counts(joined)[0] == joined:
        return {}
    renames: dict[str, str] = {}
    for path in paths:
        text, found = redact_path_counts(path)
        if found:
            renames[path] = text
            _count(found, counts)
    return renames


def _holds_secret(texts: Iterable[tuple[str, bool]], counts: dict[str, int]) -> bool:
    """Whether any of TEXTS ((text, whether it is a path: read as redact.path_text reads it)) holds a secret
    (their secrets added to COUNTS)."""
    found = redact_counts("\n".join(path_text(text) if is_path else text for text, is_path in texts))[1]
    _count(found, counts)
    return bool(found)


def scrub(start: Path | str | None, *, dry_run: bool = False) -> ScrubReport:
    """Redact every stored node's key, title, body, ref, meta and file paths, and the import structure's
    paths and specifiers, with the current rules (nexusmem.redact)."""
    project = project_mod.load(start)
    report = ScrubReport(dry_run=dry_run)
    with writer_lock(project.root), project.open_store() as store:
        # Paths first: a path that holds a secret only when read as a path (`DD-API-KEY: 40c3….py`) is
        # also in its nodes' keys, refs and titles, where plain text reading does not see it.
        renames = _path_renames(store.file_paths(), report.secrets)
        rewrites: list[tuple[str, str, str, str, str, str, str]] = []
        for stored in store.iter_nodes():
            report.scanned += 1
            counts: dict[str, int] = {}
            key = _redact_value(stored.natural_key, counts)
            head, tail = split_title(stored.title) if stored.kind == "shell_command" else (stored.title, "")
            title = _redact_value(head, counts) + tail
            body = _redact_value(stored.body, counts)
            ref = _redact_value(stored.ref, counts)
            meta = _redact_value(stored.meta, counts)
            labels = (stored.natural_key, stored.ref, stored.title, *strings_in(stored.meta))
            if not counts and not any(path in label for path in renames for label in labels):
                continue
            _count(counts, report.secrets)
            # The hash a sync would compute for the redacted node: the next sync sees it unchanged, and
            # the embedding pass (which compares hashes) re-embeds it from the redacted text.
            node = Node(
                project=stored.project_id,
                kind=stored.kind,
                source=stored.source,
                natural_key=key,
                ref=ref,
                title=title,
                body=body,
                ts=stored.ts,
                signal=stored.signal,
                group=stored.group,
                files=tuple(store.files_of(stored.id)),
                meta=meta,
                id=stored.id,
            )
            # The node's own guard (nodes._redact_labels) reads its file paths as paths and puts each
            # redacted path in place wherever its labels hold it.
            meta_json = node.meta_json()
            rewrites.append(
                (
                    stored.id,
                    node.natural_key,
                    node.title,
                    body,
                    node.ref,
                    meta_json,
                    node.content_hash(meta_json),
                )
            )
        report.changed = len(rewrites)
        report.paths = len(renames)
        report.imports = _holds_secret(store.import_texts(), report.secrets)
        # An older release kept doc paths in the docs cursor as they were: a cursor holding a secret is
        # dropped (its source's next sync reads everything again, and keeps such a path as a digest).
        report.cursors = [
            str(s["name"])
            for s in store.sources()
            if s["cursor"] and _holds_secret([(s["cursor"], False)], report.secrets)
        ]
        # The contradiction judge's reasons are model text: one written before they were redacted (or
        # under older rules) may repeat a secret of the notes it judged.
        reasons = []
        for old_hash, new_hash, reason in store.judgment_reasons():
            text, found = redact_counts(reason)
            if found:
                _count(found, report.secrets)
                reasons.append((old_hash, new_hash, text))
        report.judgments = len(reasons)
        # The project id an older release made from an origin URL holding a credential (migration 17 re-keys
        # it at the upgrade; a rule learned since finds more), and the registry's copies of such ids.
        unclean = store.unclean_project_id()
        if unclean is not None:
            report.project_id = unclean[1]
            _count(redact_counts(unclean[0])[1], report.secrets)
        report.registry = registry.clean_ids(dry_run=True) if dry_run else registry.clean_ids()

        def redacted(line: str) -> str:
            if unclean is not None:  # the old id as a line names it, a credential lower-cased with it
                line = line.replace(unclean[0], unclean[1])
            text, found = redact_counts(line)
            _count(found, report.secrets)
            return text

        report.sync_log = autosync.rewrite_logs(project.db_path.parent, redacted, dry_run=dry_run)
        # A traceback written under older rules (or by an older release) may quote a secret it failed on.
        report.crash_log = autosync.rewrite_lines(crashlog.crash_log_path(), redacted, dry_run=dry_run)
        changes = bool(rewrites or renames or report.imports or report.cursors or reasons or unclean)
        if changes:
            report.pre_upgrade = pre_upgrade_copies(project.db_path)
        if dry_run:
            return report
        if not changes:
            with store.transaction():  # nothing older rules left: the memory is as these rules write it
                store.set_meta(RULES_KEY, str(RULES_VERSION))
            return report
        stamp = time.strftime("%Y%m%dT%H%M%S")
        report.backup = project.db_path.with_name(f"{project.db_path.name}.pre-scrub-{stamp}.bak")
        store.backup_to(report.backup)
        with store.transaction():
            store.rewrite_text(rewrites)
            store.rename_file_paths(renames)
            if report.imports:
                store.clear_imports()
            for name in report.cursors:
                store.clear_cursor(name)
            store.set_judgment_reasons(reasons)
            rekeyed = store.clean_project_id() if unclean is not None else None
            report.rekeyed = rekeyed[2] if rekeyed is not None else 0
            store.add_audit(
                "scrub",
                {
                    "changed": report.changed,
                    "secrets": report.secrets,
                    "paths": report.paths,
                    "imports": report.imports,
                    "judgments": report.judgments,
                    "rekeyed": report.rekeyed,
                },
            )
            # Change words are cut from diffs (most of which are not stored): the next sync derives them
            # again under today's rules (sync.BACKFILL_CHANGE_WORDS).
            store.clear_cursor("git")
            store.set_meta("backfill.changeWords", "scrub")
            store.set_meta(RULES_KEY, str(RULES_VERSION))
        report.checkpointed = store.purge(vacuum=True)
    return report
