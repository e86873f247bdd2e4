"""forget, scrub, stale, mark-stale, review: removing things for good, and every claim's trust."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from nexusmem import timefmt
from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_human, echo_json, echo_line, library_errors
from nexusmem.errors import NexusMemError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from nexusmem.hygiene.forget import Removal
    from nexusmem.team import TeamForget

# A commit holds a copy of the text of the changelog entries (and GitHub threads) linking to it.
_LENT = "lent to {n} node(s) by a changelog entry or GitHub thread that held it"
# The post-commit sync's output and failure mark, which forget and scrub clean too.
_SYNC_LOG = ".nexusmem/auto-sync.log and auto-sync.failed"


@click.command(
    "forget",
    epilog="""\b
Examples:
  nexusmem forget 'hunter2'                 # dry run: what would go
  nexusmem forget 'hunter2' --yes
  nexusmem forget --regex 'corp-[0-9]{4}' --ignore-case --yes
  nexusmem forget 'acme-prod.internal' --global --yes
  nexusmem forget --list
  nexusmem forget --remove-entry 3f9a1c0b2d4e  # a key as --list shows it, or the value/pattern
  nexusmem forget --export ~/deny.json      # then, in another clone:
  nexusmem forget --import ~/deny.json --yes
""",
)
@repo_option
@click.argument("value", required=False)
@click.option("--regex", "pattern", metavar="PATTERN", help="Forget everything a regular expression matches.")
@click.option("--ignore-case", is_flag=True, help="Match regardless of case.")
@click.option("--yes", is_flag=True, help="Really delete (otherwise a dry run).")
@click.option(
    "--force",
    is_flag=True,
    help="Forget a value under 4 characters, or one matching over a quarter of memory (refused otherwise).",
)
@click.option("--keep-log", is_flag=True, help="Leave the shell hooks' log alone (default: rewrite it).")
@click.option(
    "--global",
    "user_wide",
    is_flag=True,
    help="Also add the entry to the user-wide deny-list every project's sync honours.",
)
@click.option("--list", "list_", is_flag=True, help="Show the active deny-list entries.")
@click.option(
    "--remove-entry",
    "remove",
    metavar="ID|VALUE",
    help="Take an entry off the deny-list (a key prefix from --list, the value, or a regex's pattern).",
)
@click.option(
    "--export",
    "export_path",
    metavar="PATH",
    type=click.Path(path_type=Path),
    help="Write the entries to PATH.",
)
@click.option(
    "--import",
    "import_path",
    metavar="PATH",
    type=click.Path(path_type=Path),
    help="Apply the entries of PATH.",
)
@click.option(
    "--team",
    is_flag=True,
    help="Also delete it from the team store and add a team deny-list entry every member's next push applies.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@library_errors
def forget_cmd(
    ctx: click.Context,
    value: str | None,
    pattern: str | None,
    ignore_case: bool,
    yes: bool,
    force: bool,
    keep_log: bool,
    user_wide: bool,
    list_: bool,
    remove: str | None,
    export_path: Path | None,
    import_path: Path | None,
    team: bool,
    as_json: bool,
) -> None:
    """Delete every node containing VALUE for good and keep any later sync from storing it again.

    Matches titles, bodies, refs and metadata. Deleted for good: the rows, both full-text indexes, vectors,
    the WAL (checkpointed and truncated) and free pages (VACUUM); the shell hooks' log loses the lines
    holding it, and so do scrub backups and the bash hook's scratch files. A literal VALUE is kept on the
    deny-list only as hashes keyed with your secret deny-list key (~/.nexusmem/deny-key.json); a --regex
    PATTERN has to be kept as written (with --team: in the team store and every member's memory too), and
    runs on a linear-time engine (RE2); a PATTERN with no regex syntax at all is the literal value, kept as a
    hash. Every removal leaves a tombstone of ids and counts, never the content.
    """
    from nexusmem.hygiene import forget
    from nexusmem.hygiene.denylist import entry_from_json, fixed_text

    root = root_of(ctx)
    given = value is not None or pattern is not None
    modes = sum(
        x for x in (list_, export_path is not None, import_path is not None, remove is not None, given)
    )
    if modes != 1 or (value is not None and pattern is not None):
        raise click.UsageError(
            "give one of: VALUE, --regex PATTERN, --list, --remove-entry ID, --export PATH, --import PATH"
        )
    if team and not given:
        raise click.UsageError("--team goes with VALUE or --regex PATTERN")
    if remove is not None:
        removed = forget.remove_entry(root, remove)
        if as_json:
            echo_json({"removed": [{**e.to_json(), "scope": e.scope} for e in removed]})
            return
        for e in removed:
            echo_human(f"removed {e.key[:12]}  {e.scope:<7}  {e.describe()}")
        click.echo(
            "what it matched is no longer dropped from now on: what was erased stays erased until"
            " `nexusmem sync --rebuild` reads it again from git, docs and the log; other projects keep their"
            " own copy of a user-wide entry (remove it there too)"
        )
        return
    if list_:
        entries = forget.list_entries(root)
        if as_json:
            echo_json({"entries": [{**e.to_json(), "scope": e.scope} for e in entries]})
            return
        if not entries:
            click.echo("the deny-list is empty")
        for e in entries:
            echo_human(f"{e.key[:12]}  {e.scope:<7}  {e.describe()}")
        return
    if export_path is not None:
        count = forget.export_entries(root, export_path)
        click.echo(
            f"wrote {count} entr(ies) to {export_path} (mode 0600), with the deny-list key they were made"
            " with. Move it through a channel you control, never git: with the key, short values can be"
            " guessed from their hashes, and regex entries are readable patterns."
        )
        return
    if team:
        from nexusmem import project
        from nexusmem import team as team_mod

        # Before anything is done: a team part that cannot run (no team store configured, no psycopg) would
        # leave the value forgotten here with only the team's error said.
        found = team_mod.ready(project.load(root))
        if pattern is not None and fixed_text(pattern) is None and not as_json:
            # Said before it is sent: a pattern is not hashed, and every member's push copies it.
            _warn_pattern_shared(found.label, dry_run=not yes, ignore_case=ignore_case)
    if import_path is not None:
        report = forget.import_entries(
            root, import_path, dry_run=not yes, keep_log=keep_log, user_wide=user_wide
        )
    else:
        text = pattern if pattern is not None else str(value)
        report = forget.forget(
            root,
            text,
            regex=pattern is not None,
            ignore_case=ignore_case,
            dry_run=not yes,
            keep_log=keep_log,
            user_wide=user_wide,
            force=force,
        )
    shared = None
    failed: NexusMemError | None = None
    if team:
        text = pattern if pattern is not None else str(value)
        try:
            shared = team_mod.forget_team(
                project.load(root), text, regex=pattern is not None, ignore_case=ignore_case, dry_run=not yes
            )
        except NexusMemError as exc:  # the team store did not answer: what was done here is said first
            failed = exc
        else:
            if yes and import_path is None:
                # This memory's entry for the value becomes the team's: the push that brings that one back
                # finds it known (it recorded a second entry for the one value).
                spelled = fixed_text(text) if pattern is not None else None
                forget.adopt_entry(root, spelled or text, entry_from_json(shared.entry))
    guarded = import_path is None and not force
    # The command that deletes the value from the team store, with a placeholder for it (never printed back):
    # for what a forget without --team leaves there, or the part a --team whose team store failed left undone.
    again = None
    if import_path is None:
        what = "--regex PATTERN" if pattern is not None and fixed_text(pattern) is None else "VALUE"
        again = f"nexusmem forget --team {what}{' --ignore-case' if ignore_case else ''} --yes"
    _show_forget(
        report,
        shared,
        user_wide=user_wide,
        as_json=as_json,
        guarded=guarded,
        team_again=None if team else again,
        team_failed=None if failed is None or again is None else (str(failed), again),
    )
    if failed is not None:
        raise failed


def _show_forget(
    report: Removal,
    shared: TeamForget | None,
    *,
    user_wide: bool,
    as_json: bool,
    guarded: bool = False,
    team_again: str | None = None,
    team_failed: tuple[str, str] | None = None,
) -> None:
    """What forget did here (REPORT) and in the team store (SHARED), or, in a dry run, would do (GUARDED:
    and whether --yes refuses it without --force); TEAM_AGAIN: the command that deletes from the team store
    what a forget without --team leaves there; TEAM_FAILED: (the error, the command that does the team part)
    of a --team whose team part could not run."""
    from nexusmem.hygiene.forget import too_broad

    if as_json:
        data = report.to_json()
        if team_failed is not None:
            data["team"] = {"done": False, "error": team_failed[0], "again": team_failed[1]}
        if shared is not None:
            data["team"] = {
                "done": True,
                "url": shared.label,
                "removed": shared.removed,
                "kinds": shared.kinds,
                "project_ids": shared.project_ids,
                "project_nodes": shared.project_nodes,
                "pattern_shared": shared.pattern_shared,
            }
        echo_json(data)
        return
    if shared is not None:
        team_kinds = ", ".join(f"{n} {k}" for k, n in shared.kinds.items()) or "nothing stored"
        verb = "would delete" if shared.dry_run else "deleted"
        echo_human(f"team store {shared.label}: {verb} {shared.removed} node(s): {team_kinds}")
        if shared.project_ids:
            click.echo(
                f"team store: {verb} everything held under {shared.project_ids} project id(s) holding the value"
                f" (an older release's id, with a credential of the origin URL): {shared.project_nodes} node(s),"
                " every member's"
            )
        if not shared.dry_run:
            # A plain `sync` never contacts the team store: only a push (the post-commit one with
            # team.autoPush) reads the team's deny-list.
            click.echo(
                "team deny-list: entry recorded; every member's next `nexusmem team push` applies it (the"
                " post-commit one too, with team.autoPush on; a plain `nexusmem sync` does not)"
            )
    kinds = ", ".join(f"{n} {k}" for k, n in report.kinds.items()) or "nothing stored"
    log = "the shell log is left as it is" if report.log_kept else f"{report.log_lines} shell-log line(s)"
    if report.dry_run:
        click.echo(f"would delete {report.removed} node(s): {kinds}; {log}")
        if guarded and too_broad(report):
            click.echo(
                f"that is {report.removed / report.total:.0%} of the {report.total} nodes in memory:"
                " --yes refuses it without --force"
            )
        for title in report.titles:
            echo_human(f"  - {title[:100]}")
        if report.notes_cleared:
            click.echo(f"would clear the text {_LENT.format(n=report.notes_cleared)}")
        if report.sync_log:
            click.echo(f"would remove {report.sync_log} line(s) holding it from {_SYNC_LOG}")
        if report.crash_log:
            echo_line(
                f"would remove {report.crash_log} line(s) holding it from the crash log ({_crash_log()})"
            )
        if report.others_sync_log:
            click.echo(
                f"would remove {report.others_sync_log} line(s) holding it from the post-commit sync logs of"
                f" {report.others_sync_projects} other project(s) ({_SYNC_LOG})"
            )
        _show_unreached(report)
        known = f" ({report.entries_known} already on it)" if report.entries_known else ""
        click.echo(f"deny-list: would add {report.entries_added} entr(ies){known}")
        _show_pattern(report, user_wide=user_wide)
        _show_team_copies(report, team_again)
        if report.set_up:
            echo_line(
                f"this repository has no memory yet: --yes sets it up ({report.set_up}, as `nexusmem init`"
                " does) with the entries, so its first sync already leaves out what they match"
            )
        click.echo("dry run: add --yes to delete and add the deny-list entry")
        if team_failed is not None:
            click.echo(
                "team store: its part could not run (the error below): this dry run shows this memory only;"
                " run it again once the team store answers"
            )
        return
    click.echo(
        f"deleted {report.removed} node(s): {kinds}; removed {log}"
        if not report.log_kept
        else f"deleted {report.removed} node(s): {kinds}; {log}"
    )
    added = "added" if report.entries_added else "already on it"
    click.echo(
        f"deny-list: {report.entries_added + report.entries_known} entr(ies) {added}"
        + ("; added to the user-wide list" if report.global_added else "")
    )
    _show_pattern(report, user_wide=user_wide)
    _show_team_copies(report, team_again)
    if report.set_up:
        echo_line(
            f"set up the memory of this repository ({report.set_up}, as `nexusmem init` does) to hold the"
            " entries: its first sync (the next `nexusmem sync`) already leaves out what they match"
        )
    if report.notes_cleared:
        click.echo(f"cleared the text {_LENT.format(n=report.notes_cleared)}")
    if report.sync_log:
        click.echo(f"removed {report.sync_log} line(s) holding it from {_SYNC_LOG}")
    if report.crash_log:
        echo_line(f"removed {report.crash_log} line(s) holding it from the crash log ({_crash_log()})")
    if report.others_sync_log:
        click.echo(
            f"removed {report.others_sync_log} line(s) holding it from the post-commit sync logs of"
            f" {report.others_sync_projects} other project(s) ({_SYNC_LOG})"
        )
    _show_unreached(report)
    if report.rekeyed:
        click.echo(f"re-keyed {report.rekeyed} older salted-hash entr(ies) with your deny-list key")
    if report.words_pending:
        click.echo(
            "change words: the next sync derives every commit's again without the value"
            + (f" ({report.words_cleared} commit(s) lost theirs now)" if report.words_cleared else "")
        )
    if report.imports_cleared:
        click.echo(
            "import structure: dropped (a path or import held the value); the next sync reads it again"
        )
    if report.backups:
        click.echo(f"also removed from {report.backups} scrub backup(s)")
    for name in report.pre_upgrade:
        click.echo(
            f"{'would remove' if report.dry_run else 'removed'} {name}, the copy an upgrade kept of the old"
            " memory (it may hold the value, and only the release that wrote it could clean it): going back to"
            " that release now starts from an empty memory (`nexusmem sync` with it)"
        )
    for name in report.skipped_links:
        echo_line(f"WARNING: {name} is a symbolic link: not followed; check what it points to by hand")
    if report.verified_absent is True and report.own_words:
        click.echo(
            "verified: the value is in nothing this project's memory.db holds (nor its -wal/-shm, nor backups);"
            " its bytes are there only as NexusMem's own words (a field's name, the schema,"
            " a command's exit and shell)"
        )
    elif report.verified_absent is True:
        click.echo(
            "verified: the value is in none of this project's memory.db bytes (nor its -wal/-shm, nor backups)"
        )
    if user_wide and not report.dry_run:
        if report.others_pending:
            click.echo(
                f"{len(report.others_pending)} other registered project(s) apply the user-wide entry at their"
                " next sync (`nexusmem sync` there); any of them that holds the value keeps it until then:"
            )
            for other in report.others_pending:
                echo_human(f"  - {other}")
        else:
            click.echo("other projects: none registered; any project is cleaned at its next sync")
    if report.verified_absent is False:
        click.echo("WARNING: the value is still in the database files:")
        for where in report.still_in:
            echo_human(f"  - {where}")
    if not report.checkpointed:
        click.echo(
            "WARNING: a reader kept the WAL from being truncated; run the command again once it is done"
        )
    if team_failed is not None:
        echo_line(
            "this memory's part is done (above); the team store's part is not (the error below): nothing was"
            " deleted there and no team deny-list entry recorded, so the team store and every member's memory"
            f" keep what they hold. When the team store answers again, run `{team_failed[1]}`: this memory's"
            " part then finds its entry already there and does nothing twice"
        )


# For a secret, the literal form: only a keyed hash of the value is kept (and, with --team, shared).
_SECRET_FORM = "for a secret, forget the value itself: `nexusmem forget {team}VALUE{case} --yes` keeps only a keyed hash of it"


def _warn_pattern_shared(label: str, *, dry_run: bool, ignore_case: bool) -> None:
    """Before a `forget --team --regex` sends anything: the pattern goes as written to the team store LABEL and,
    through every member's next push, into their memory.db; the literal form for a secret."""
    sent = "--yes sends the pattern as written" if dry_run else "the pattern is sent as written"
    echo_line(
        f"WARNING: a regex cannot be hashed: {sent} to the deny-list of team store {label} and, at each"
        " member's next `nexusmem team push`, into every member's memory.db (`nexusmem forget --list` shows it);"
        f" {_SECRET_FORM.format(team='--team ', case=' --ignore-case' if ignore_case else '')}"
    )


def _show_pattern(report: Removal, *, user_wide: bool) -> None:
    """What becomes of a --regex PATTERN: the literal value it is (no regex syntax: a keyed hash), or kept as
    written, where, and the form a secret takes."""
    if report.pattern_as_value:
        click.echo(
            "note: the pattern has no regex syntax (only literal characters, some escaped: `\\.`): it is"
            " forgotten as the literal value it spells, kept only as a keyed hash, as `nexusmem forget VALUE`"
            " does"
        )
    elif report.pattern_kept:
        keeps = "--yes keeps the" if report.dry_run else "a regex entry keeps its"
        where = "memory.db" + (" and the user-wide deny-list" if user_wide else "")
        click.echo(
            f"note: {keeps} pattern as written in {where} (a pattern cannot be hashed);"
            f" {_SECRET_FORM.format(team='', case='')}"
        )


def _show_team_copies(report: Removal, again: str | None) -> None:
    """What a forget without --team leaves in the configured team store (REPORT.team_*, from this memory's
    record of its pushes) and AGAIN, the command that deletes it there; nothing when none of the nodes is
    of a kind this member shares."""
    if again is None or not report.team_url or not report.team_shared:
        return
    where = f"team store {report.team_url}"
    if report.team_pushed:
        verb = "were" if report.dry_run else "had been"
        echo_line(
            f"{where}: {report.team_pushed} of the{'se' if report.dry_run else ' deleted'} node(s) {verb} pushed"
            " there from this memory and stay there (a forget without --team changes this memory only);"
            f" to delete them for every member: `{again}`"
        )
    else:
        echo_line(
            f"{where}: no push from this memory had sent {'these' if report.dry_run else 'the deleted'} node(s),"
            f" but another member's push of the same history may have; `{again}` deletes them there"
        )


def _crash_log() -> str:
    from nexusmem.crashlog import crash_log_path

    return str(crash_log_path())


def _show_unreached(report: Removal) -> None:
    """The other registered projects whose post-commit sync logs a user-wide forget could not reach."""
    if not report.others_unreached:
        return
    verb = "cannot" if report.dry_run else "could not"
    click.echo(
        f"{verb} reach the post-commit sync logs of {len(report.others_unreached)} other registered project(s)"
        f" ({_SYNC_LOG}): any of them that holds the value keeps it there; run the same forget in it once it"
        " can be reached:"
    )
    for where in report.others_unreached:
        echo_human(f"  - {where}")


@click.command(
    "scrub",
    epilog="""\b
Examples:
  nexusmem scrub --dry-run
  nexusmem scrub
""",
)
@repo_option
@click.option("--dry-run", is_flag=True, help="Only count what the current rules would redact.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@library_errors
def scrub_cmd(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Re-run today's secret redaction over everything already stored, then delete the old text for good.

    A backup of memory.db (mode 0600; it still holds the secrets) is written next to it first.
    """
    from nexusmem.hygiene import scrub

    report = scrub.scrub(root_of(ctx), dry_run=dry_run)
    if as_json:
        echo_json(report.to_json())
        return
    found = ", ".join(f"{n} {k}" for k, n in sorted(report.secrets.items())) or "none"
    verb = "would redact" if dry_run else "redacted"
    also = f", {report.paths} file path(s)" if report.paths else ""
    if report.imports:
        also += ", the import structure (read again by the next sync)"
    if report.cursors:
        also += f", where {' and '.join(report.cursors)} got to (read again by the next sync)"
    if report.judgments:
        also += f", {report.judgments} contradiction judgment reason(s)"
    if report.sync_log:
        also += f", {report.sync_log} line(s) of the post-commit sync's log ({_SYNC_LOG})"
    if report.crash_log:
        also += f", {report.crash_log} line(s) of the crash log ({_crash_log()})"
    echo_line(f"{verb} {report.changed} of {report.scanned} node(s){also}; secrets: {found}")
    if report.project_id is not None:
        how = "would re-key" if dry_run else f"re-keyed its {report.rekeyed} node(s) to"
        click.echo(f"the project id held a credential of the origin URL: {how} {report.project_id}")
    if report.registry:
        how = "would re-key" if dry_run else "re-keyed"
        click.echo(f"{how} {report.registry} project id(s) in the registry that held a credential")
    if report.backup is not None:
        echo_line(
            f"backup: {report.backup} (mode 0600; delete it once you are satisfied: it holds the secrets)"
        )
    for version, copy in report.pre_upgrade:
        said = scrub.unscrubbed_copy_text(
            version, copy, "this scrub would remove" if dry_run else "this scrub removed"
        )
        echo_line(f"WARNING: {said}: rm {shlex.quote(str(copy))}")


@click.command(
    "stale",
    epilog="""\b
Examples:
  nexusmem stale
  nexusmem stale --check-contradictions
""",
)
@repo_option
@click.option(
    "--check-contradictions",
    is_flag=True,
    help="Ask the local model (contradictions.model via Ollama) whether a newer node contradicts each one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
@library_errors
def stale_cmd(ctx: click.Context, check_contradictions: bool, as_json: bool) -> None:
    """List doc sections and other non-observed claims older than stale.maxAgeDays (45 by default) that
    something newer touches: a later commit changed a file they belong to or name, or a newer node covers
    the same subject. Writes nothing but memoised model judgments."""
    from nexusmem.hygiene import stale

    found, summary, checked = stale.stale(root_of(ctx), check_contradictions=check_contradictions)
    if as_json:
        echo_json(
            {
                "checked": checked,
                "candidates": [c.to_json() for c in found],
                "check": None
                if summary is None
                else {
                    "judged": summary.judged,
                    "memoised": summary.memoised,
                    "flagged": summary.flagged,
                    "bad_answers": summary.bad_answers,
                    "unavailable": summary.unavailable,
                },
            }
        )
        return
    if summary is not None:
        for note in summary.notes:
            echo_human(f"note: {note}", err=True)
    if not found:
        click.echo(f"checked {checked} old claim(s); none listed: nothing newer touches them")
        return
    click.echo(
        f"checked {checked} old claim(s); {len(found)} listed: a file they belong to or name changed since,"
        " or a newer node covers the same subject"
    )
    for c in found:
        tag = f"[{c.provenance}]" + (f" [{c.trust}]" if c.trust != "candidate" else "")
        echo_human(f"- {timefmt.day(c.ts)} {tag} {c.title[:110]}")
        click.echo(f"  id {c.id}")
        echo_human(f"  why: {c.why}")
        for new_id, title, reason in c.suggestions:
            echo_human(f"  likely superseded by {new_id} {title[:80]} -- {reason}")
    if summary is not None:
        click.echo(
            f"checked: {summary.judged} new judgment(s), {summary.memoised} already judged,"
            f" {summary.flagged} new likely contradiction(s)"
        )


@click.command(
    "mark-stale",
    epilog="Example:\n\n  nexusmem mark-stale 3f9a1c --supersedes 8be21d",
)
@repo_option
@click.argument("old")
@click.option(
    "--supersedes", "new", metavar="NEW", help="Id (or unique prefix) of the node that replaces OLD."
)
@click.option("--clear", is_flag=True, help="Remove OLD's replacement instead.")
@click.pass_context
@library_errors
def mark_stale_cmd(ctx: click.Context, old: str, new: str | None, clear: bool) -> None:
    """Record that node NEW replaces node OLD: OLD ranks lower from now on (×.7) but is never deleted."""
    from nexusmem.hygiene import review

    if (new is None) == (not clear) or (new is not None and clear):
        raise click.UsageError("give --supersedes NEW, or --clear")
    old_node, new_node = review.mark_stale(root_of(ctx), old, None if clear else new)
    if new_node is None:
        click.echo(f"{old_node.id} is no longer marked as superseded")
    else:
        echo_human(
            f"{old_node.id} ({old_node.title[:60]}) is superseded by {new_node.id} ({new_node.title[:60]})"
        )


@click.command(
    "review",
    epilog="""\b
Examples:
  nexusmem review 3f9a1c --verify
  nexusmem review 3f9a1c --reject
""",
)
@repo_option
@click.argument("node_id")
@click.option("--verify", is_flag=True, help="You checked it: it holds ([verified] tag).")
@click.option("--reject", is_flag=True, help="It is wrong: tagged [rejected], ranked ×.5.")
@click.option("--clear", is_flag=True, help="Back to unreviewed.")
@click.pass_context
@library_errors
def review_cmd(ctx: click.Context, node_id: str, verify: bool, reject: bool, clear: bool) -> None:
    """Record your verdict on one node; shown on every result, never overwritten by a sync."""
    from nexusmem.hygiene import review

    given = [name for name, on in (("verify", verify), ("reject", reject), ("clear", clear)) if on]
    if len(given) != 1:
        # Two verdicts at once took the last one silently.
        raise click.UsageError("give one of --verify, --reject or --clear")
    verdict = given[0]
    node, previous = review.review(root_of(ctx), node_id, verdict)
    now = review.VERDICTS[verdict]
    echo_human(f"{node.id} ({node.title[:70]}): {previous} -> {now}")
