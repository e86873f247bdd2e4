"""scan-*: dry-run previews of what the next sync would store. They write nothing.

A source that reads over the network (github) scans from the cursor its last sync left, exactly as the
next sync would (a full scan would cost one API call per thread); a source never synced scans everything.

Each node the source yields is compared with the store by id and content hash, as the sync's upsert does:
only new and changed nodes are listed, and unchanged ones are counted, so an up-to-date memory previews
"0 new, 0 changed, N unchanged" rather than a whole first sync."""

from __future__ import annotations

import itertools

import click

from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_human, echo_json, library_errors


def _preview(ctx: click.Context, source_name: str, limit: int, as_json: bool) -> None:
    from nexusmem import project as project_mod
    from nexusmem.hygiene.denylist import Matcher, load_global, stored_entries
    from nexusmem.sources import registry
    from nexusmem.sync import scan_context

    proj = project_mod.load(root_of(ctx), require_init=False)
    source = registry.get(source_name)
    cursor: str | None = None
    if getattr(source, "preview_from_cursor", False) and project_mod.is_initialised(proj.root):
        with proj.open_store() as store:
            cursor = store.cursor(source_name)
    scan = scan_context(proj, cursor, full=cursor is None)
    stored: dict[str, str] = {}
    denied = 0
    if project_mod.is_initialised(proj.root):
        with proj.open_store() as store:
            scan.known["shell_command_stamps"] = store.shell_command_stamps
            scan.known["agent_calls_stored"] = store.agent_calls_stored
            scan.known["thread_closers"] = store.thread_closers
            scan.known["turn_keys"] = store.turn_keys  # a resumed agent session's copies are not new turns
            # The deny-list as the sync gates with it (without applying a new user-wide entry: a preview
            # writes nothing): a forgotten value is neither listed as new nor shown again.
            deny = Matcher([*stored_entries(store), *load_global()])
            if deny:
                scan.known["denied"] = lambda text: deny.which([text]) is not None
            result = source.scan(scan)
            # A node's last version within one scan wins, as in upsert.
            every = {n.id: n for n in (deny.filter(result.nodes) if deny else result.nodes)}
            denied = deny.dropped
            stored = store.content_hashes(list(every))
            # A second-hand node never overwrites a first-hand one (upsert): it would change nothing.
            for i in store.firsthand_ids([i for i, n in every.items() if n.secondhand and i in stored]):
                stored[i] = every[i].content_hash(every[i].meta_json())
    else:
        result = source.scan(scan)
        every = {n.id: n for n in result.nodes}
    new = [n for n in every.values() if n.id not in stored]
    changed = [n for n in every.values() if n.id in stored and n.content_hash(n.meta_json()) != stored[n.id]]
    unchanged = len(every) - len(new) - len(changed)
    pending = new + changed
    nodes = list(itertools.islice(pending, limit)) if limit else pending
    if as_json:
        echo_json(
            [
                {
                    "id": n.id,
                    "kind": n.kind,
                    "ref": n.ref,
                    "title": n.title,
                    "signal": n.signal,
                    "ts": n.ts,
                    "files": list(n.files),
                }
                for n in nodes
            ]
        )
        return
    for n in nodes:
        echo_human(f"{n.signal:.2f}  {n.title}")
    click.echo(
        f"{source_name}: {len(new)} new, {len(changed)} changed, {unchanged} unchanged node(s)"
        + (f" (showing the first {limit})" if limit and len(pending) > limit else "")
        + (f", {result.skipped} skipped" if result.skipped else "")
        + (f", {denied} denied (forgotten values)" if denied else "")
        + ". Nothing was written."
    )
    if result.state and not result.state.startswith("read "):
        click.echo(f"{source_name}: {result.state}", err=True)


def _make(name: str, what: str) -> click.Command:
    @click.command(
        f"scan-{name}",
        help=f"Preview the {what} a sync would store (writes nothing).",
        epilog=f"Example:\n\n  nexusmem scan-{name} --limit 20",
    )
    @repo_option
    @click.option("--limit", type=click.IntRange(min=0), default=0, help="Show at most N nodes (0 = all).")
    @click.option("--json", "as_json", is_flag=True, help="Print the nodes as JSON.")
    @click.pass_context
    @library_errors
    def command(ctx: click.Context, limit: int, as_json: bool) -> None:
        _preview(ctx, name, limit, as_json)

    return command


scan_git = _make("git", "commit nodes")
scan_diff = _make("diff", "per-file diff nodes")
scan_docs = _make("docs", "doc section nodes")
scan_shell = _make("shell", "shell command nodes")
scan_conversation = _make(
    "conversation",
    "conversation turns and agent shell calls (from Claude Code, Codex, Aider, Gemini CLI transcripts)",
)
scan_atuin = _make("atuin", "shell command nodes from atuin's history.db")
scan_github = _make("github", "GitHub issue and PR nodes (via gh)")


@click.command(
    "scan-structure",
    help="Preview the import edges the next sync would add or remove (Python, JS/TS, Go, Rust, Java; "
    "tracked files only). Writes nothing.",
    epilog="Example:\n\n  nexusmem scan-structure --limit 20",
)
@repo_option
@click.option("--limit", type=click.IntRange(min=0), default=0, help="Show at most N edges (0 = all).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
@library_errors
def scan_structure(ctx: click.Context, limit: int, as_json: bool) -> None:
    from nexusmem import project as project_mod
    from nexusmem.structure import scan as structure

    proj = project_mod.load(root_of(ctx), require_init=False)
    max_bytes = int(proj.config.get("structure", {}).get("maxFileBytes", 1_000_000))
    if project_mod.is_initialised(proj.root):
        from nexusmem.hygiene.denylist import Matcher, load_global, stored_entries

        with proj.open_store() as store:
            deny = Matcher([*stored_entries(store), *load_global()])  # what the next sync leaves out
            denied = (lambda text: deny.which([text]) is not None) if deny else None
            plan = structure.plan(proj.root, store, max_bytes, denied)
    else:
        plan = structure.plan(proj.root, structure.Nothing(), max_bytes)
    changes = [("+", a, b) for a, b in sorted(plan.add)] + [("-", a, b) for a, b in sorted(plan.remove)]
    shown = changes[:limit] if limit else changes
    if as_json:
        data = plan.to_json()
        if limit:
            data["added"], data["removed"] = data["added"][:limit], data["removed"][:limit]
        echo_json(data)
        return
    for sign, a, b in shown:
        echo_human(f"{sign} {a} → {b}")
    click.echo(
        plan.describe()
        + (f" (showing the first {limit} changes)" if limit and len(changes) > limit else "")
        + ". Nothing was written."
    )


@click.command(
    "scan-session",
    help="Preview the session summaries the next sync would make: with --dry-run the exact prompts it would "
    "send to the local model (nothing is sent); without it the model's answers. Writes nothing.",
    epilog="Example:\n\n  nexusmem scan-session --dry-run",
)
@repo_option
@click.option("--dry-run", is_flag=True, help="Print the prompts without calling the model.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
@library_errors
def scan_session(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    from nexusmem import project as project_mod
    from nexusmem.sources import session

    proj = project_mod.load(root_of(ctx), require_init=False)
    if not project_mod.is_initialised(proj.root):
        report: dict[str, object] = session.preview_of_nothing(proj.config)
    else:
        with proj.open_store(readonly=True) as store:
            report = session.preview(store, proj.id, proj.config, ask=not dry_run)
    enabled = session.SessionSource().enabled(proj.config)
    if as_json:
        echo_json({"dry_run": dry_run, "enabled": enabled, **report})
        return
    prompts = report["prompts"]
    assert isinstance(prompts, list)
    for item in prompts:
        echo_human(f"=== session {item['key']} ({item['turns']} turn(s), prompt {item['prompt_hash']})")
        if dry_run:
            for message in item["messages"]:
                echo_human(f"--- {message['role']}")
                echo_human(message["content"])
        elif "error" in item:
            echo_human(f"not summarised: {item['error']}")
        else:
            echo_human(f"title ({item['title_from']}): {item['title']}")
            echo_human(item["summary"])
        click.echo("")
    failed = sum(1 for item in prompts if "error" in item)
    if dry_run:
        verb = "would be sent to"
    elif failed == len(prompts) and prompts:
        verb = "not answered by"  # the server was unreachable: saying "sent" misled
    elif failed:
        verb = f"sent to ({failed} not answered)"
    else:
        verb = "sent to"
    click.echo(
        f"session: {len(prompts)} prompt(s) {verb} {report['model']} at {report['url']}; "
        f"{report['settling']} waiting to settle, {report['queued']} queued for a later sync, "
        f"{report['up_to_date']} up to date, {report['reused']} unchanged prompt(s) re-used. "
        + ("Nothing was sent or written." if dry_run else "Nothing was written.")
    )
    if not enabled:
        click.echo("sources.session.enabled is false in .nexusmem/config.json: sync makes no summaries.")
