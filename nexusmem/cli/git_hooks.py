"""`nexusmem hook git ...` (pre-commit: precheck) and `nexusmem hook git-post ...` (post-commit, post-merge
and post-applypatch: auto-sync).

Thin: parse, call nexusmem.install.git_hooks, print. Registered on the `hook` group in cli/hook.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from nexusmem import paths
from nexusmem.cli.app import repo_option, root_of
from nexusmem.cli.common import echo_line, library_errors
from nexusmem.install import git_hooks


def _report_install(result: git_hooks.InstallResult, what: str, root: Path, *, notes: bool = True) -> None:
    messages = {
        "created": f"Installed the {what} in {result.path}.",
        "chained": f"Added the {what} to the existing hook {result.path} (the existing hook still runs).",
        "legacy": (
            f"Moved the existing hook to {result.path.name}{git_hooks.LEGACY_SUFFIX} and installed the {what}"
            f" in {result.path}, which runs it afterwards."
        ),
        "updated": f"Updated the {what} in {result.path}.",
        "unchanged": f"The {what} is already in {result.path}.",
        "repaired": f"Repaired the {what} in {result.path} ({result.was_broken}).",
    }
    echo_line(messages[result.how])
    if result.path.name.endswith(git_hooks.FRAMEWORK_SUFFIX) and result.changed:
        echo_line(
            f"(The pre-commit framework's hook {result.path.with_suffix('').name} runs {result.path.name} first;"
            " `pre-commit install` leaves it (`-f` deletes it), and `pre-commit uninstall` puts it back in its"
            " place.)"
        )
    if result.warning:
        echo_line(f"Warning: {result.warning}", err=True)
    if not notes:
        return
    pinned = git_hooks.pinned_only_warning()
    if pinned:
        echo_line(f"Note: {pinned}", err=True)
    if result.shared is not None:
        echo_line(
            f"Note: core.hooksPath ({result.shared}) makes {result.path.parent} the hooks folder of every"
            " repository: there the auto-sync keeps each repository that has a memory up to date, and"
            " builds none in the others (run `nexusmem sync` in a repository once to add it).",
            err=True,
        )
    blocked = paths.state_in_the_way(root / ".nexusmem")
    if blocked is not None:
        echo_line(
            f"Warning: {blocked[0]}: no memory can be made here, and the hooks do nothing until it is gone;"
            f" {blocked[1]}, then run `nexusmem sync`.",
            err=True,
        )
    elif not paths.db_path(root).exists() and (stashed := paths.stashed_memory(root)) is not None:
        # The hooks build no memory in its place (`git stash pop` would stop on it), nor does precheck read one.
        echo_line(f"No memory here now: {paths.stashed_text(root, stashed)}.")
    elif not (root / ".nexusmem").is_dir():
        if result.shared is not None:
            echo_line(
                "No memory in this repository yet: run `nexusmem sync` once, and commits keep it current."
            )
        elif result.path.name in git_hooks.SYNC_HOOKS:
            echo_line("No memory in this repository yet: the next commit builds it in the background.")
        elif git_hooks.status("post-commit", root).installed:
            echo_line(
                "No memory in this repository yet, so precheck has nothing to check: the auto-sync hook"
                " builds it after the next commit (or run `nexusmem sync` now)."
            )
        else:
            echo_line(
                "No memory in this repository yet, so precheck has nothing to check:"
                " run `nexusmem sync` (or install the post-commit hook: `nexusmem hook git-post install`)."
            )


def _report_status(state: git_hooks.HookState, what: str, verb: str, start: Path | None) -> None:
    if not state.installed:
        if state.framework:
            # The framework's own hook is there and our block is not in its NAME.legacy (which, absent, is
            # not named): the README's .pre-commit-config.yaml route runs NexusMem without one.
            hook = state.path.with_name(state.name)
            runs = git_hooks.framework_runs(state.name, start)
            if runs is not None:
                config, number, hook_id = runs
                echo_line(
                    f"{state.name}: run by the pre-commit framework ({hook_id} in {config}, line {number}):"
                    f" {hook}"
                )
                return
            echo_line(f"{state.name}: not installed (the pre-commit framework's hook is there): {hook}")
        elif not state.exists and git_hooks.framework_lacks(state.name, start) is not None:
            # The framework syncs after a commit, a merge or a pull, but has no hook for this one.
            echo_line(
                f"{state.name}: not installed, and the pre-commit framework has no {state.name} hook: what"
                f" `git am` applies waits for the next sync (`nexusmem hook {verb} install` adds this hook"
                " alone)"
            )
        else:
            other = " (another tool's hook is there)" if state.exists and not state.unreadable else ""
            echo_line(f"{state.name}: not installed{other}: {state.path}")
        if state.unreadable:
            echo_line(
                f"  Warning: {state.unreadable}; move it away, then `nexusmem hook {verb} install`", err=True
            )
        if git_hooks.gone(state.name, start) is not None:
            echo_line(
                f"  Warning: {git_hooks.gone_text(state)}; `nexusmem hook {verb} install` puts it back",
                err=True,
            )
        elsewhere = git_hooks.elsewhere(state.name, start)
        if elsewhere is not None:
            detail, fix = git_hooks.elsewhere_text([elsewhere], start)
            echo_line(f"  Warning: {detail}; fix: {fix}", err=True)
        unused = git_hooks.unused(state.name, start)
        if unused is not None:
            echo_line(
                f"  Warning: our block is in {unused.path}, which git does not run (core.hooksPath sends it to"
                f" {state.path.parent}): `nexusmem hook {verb} install` puts it where git looks,"
                f" `nexusmem hook {verb} remove` takes it out",
                err=True,
            )
            shared = git_hooks.shared_folder(start)
            if shared is not None:
                echo_line(
                    f"  Note: core.hooksPath is set user-wide ({shared}): installing there runs {what} in"
                    f" every repository that has a memory, not only this one",
                    err=True,
                )
        return
    mode = {"created": "our own file", "chained": "chained into an existing hook", "legacy": "wrapping"}
    extra = " --strict" if state.strict else ""
    word = "broken" if state.broken else "installed"
    through = ", run by the pre-commit framework's hook" if state.framework else ""
    echo_line(f"{state.name}: {word}{extra} ({mode.get(state.how or '', '?')}{through}): {state.path}")
    doubled = git_hooks.doubled(state, start)
    if doubled is not None:
        echo_line(f"  Warning: {doubled[0]}; fix: {doubled[1]}", err=True)
    if state.broken:
        echo_line(f"  {state.broken}; fix: nexusmem hook {verb} install", err=True)
    elif state.fallback:
        echo_line(f"  runs {what} with {state.fallback} (from PATH: {state.command} is gone)")
        echo_line(f"  Warning: re-pin it with `nexusmem hook {verb} install`", err=True)
    else:
        echo_line(f"  runs {what} with {state.command}")
    verdict = git_hooks.verdict(state, start)  # doctor's: another install, or an older release's body
    if verdict is not None:
        echo_line(f"  Warning: {verdict[0]}; fix: {verdict[1]}", err=True)
    if not state.executable:
        runner = "the pre-commit framework" if state.framework else "git"
        echo_line(f"  Warning: {state.path} is not executable, so {runner} does not run it", err=True)
    if state.legacy_off:
        echo_line(
            f"  Note: {state.legacy} (the hook it wraps) is not executable, so it does not run (git did not"
            " run it before either)",
            err=True,
        )
    if state.legacy_missing:
        echo_line(
            f"  Warning: {state.legacy} (the hook it wraps, which `--force` moved aside) is missing, so only"
            f" {what} runs: put that hook back there, or `nexusmem hook {verb} remove` to stop wrapping it",
            err=True,
        )


def _remove(ctx: click.Context, names: tuple[str, ...], what: str) -> None:
    """Take our block out of each hook of NAMES wherever it is: the folder git runs hooks from, and the
    repository's own hooks folder when core.hooksPath points elsewhere (left there by an earlier install).
    Of a hook file that holds no block it says so; of one that does not exist (the pre-commit framework's
    post-merge.legacy it never wrote), nothing, and one line when there was nothing anywhere."""
    root = root_of(ctx)
    removed = False
    for name in names:
        for directory in git_hooks.hook_dirs(root):
            path, changed = git_hooks.remove(name, root, directory)
            if changed:
                removed = True
                echo_line(f"Removed the {what} from {path}.")
        git_hooks.forget(name, root)
    if removed:
        return
    folder = git_hooks.hooks_dir(root)
    there = [p for p in (git_hooks.hook_file(n, folder) for n in names) if os.path.lexists(p)]
    for path in there:
        echo_line(f"No {what} in {path}.")
    if not there:
        echo_line(f"No {what} in {folder}: nothing to remove.")


@click.group(name="git")
def git_group() -> None:
    """The pre-commit hook: `nexusmem precheck` on every commit (advisory unless --strict).

    \b
    Example:
        nexusmem hook git install
    """


@git_group.command(name="install")
@repo_option
@click.option("--strict", is_flag=True, help="Refuse the commit when precheck finds something.")
@click.option(
    "--force", is_flag=True, help="Wrap a hook that is not a shell script (moved aside, still runs)."
)
@click.pass_context
@library_errors
def git_install(ctx: click.Context, strict: bool, force: bool) -> None:
    """Run precheck from this repository's pre-commit hook (idempotent; keeps an existing hook).

    \b
    Examples:
        nexusmem hook git install
        nexusmem hook git install --strict
    """
    root = paths.repo_root(root_of(ctx))
    runs = git_hooks.framework_runs("pre-commit", root)
    if runs is not None:
        # The pre-commit framework runs precheck itself: a block in its pre-commit.legacy, which its hook
        # runs first, would be a second one.
        config, number, hook_id = runs
        if strict and hook_id != git_hooks.STRICT_ID:
            why = (
                f"the pre-commit framework runs precheck already ({hook_id} in {config}, line {number}): to"
                f" refuse commits, make it `id: {git_hooks.STRICT_ID}` there (or give it `args: [--strict]`)"
                " rather than install a second precheck beside it"
            )
            _exit_on(ctx, [why], "Nothing was installed.")
        left = git_hooks.leave_to_framework("pre-commit", root)
        removed = left[1] if left is not None else None
        taken = f"; took NexusMem's block out of {removed}, where it ran a second precheck" if removed else ""
        echo_line(
            f"pre-commit: left to the pre-commit framework, which runs precheck already ({hook_id} in {config},"
            f" line {number}){taken}."
        )
        return
    _report_install(
        git_hooks.install("pre-commit", root_of(ctx), strict=strict, force=force), "precheck hook", root
    )


@git_group.command(name="remove")
@repo_option
@click.pass_context
@library_errors
def git_remove(ctx: click.Context) -> None:
    """Take the precheck hook out, leaving the pre-commit hook exactly as it was before.

    \b
    Example:
        nexusmem hook git remove
    """
    _remove(ctx, ("pre-commit",), "precheck hook")


@git_group.command(name="status")
@repo_option
@click.pass_context
@library_errors
def git_status(ctx: click.Context) -> None:
    """Show whether the pre-commit hook runs precheck, and with which nexusmem.

    \b
    Example:
        nexusmem hook git status
    """
    _report_status(git_hooks.status("pre-commit", root_of(ctx)), "precheck", "git", root_of(ctx))
    _report_record(root_of(ctx))


def _report_record(start: Path | None) -> None:
    """One line when the record of the hooks NexusMem installed cannot be read (git_hooks.record_problem)."""
    problem = git_hooks.record_problem(start)
    if problem is not None:
        echo_line(f"  Warning: {problem[0]}; fix: {problem[1]}", err=True)


@click.group(name="git-post")
def git_post_group() -> None:
    """The auto-sync hooks: a detached `nexusmem sync --auto` after every commit, merge or pull, and `git am`.

    \b
    Example:
        nexusmem hook git-post install
    """


@git_post_group.command(name="install")
@repo_option
@click.option(
    "--force", is_flag=True, help="Wrap a hook that is not a shell script (moved aside, still runs)."
)
@click.pass_context
@library_errors
def git_post_install(ctx: click.Context, force: bool) -> None:
    """Sync in the background after every commit, merge or pull, and `git am` (post-commit, post-merge and
    post-applypatch hooks; idempotent; keeps existing hooks).

    \b
    Example:
        nexusmem hook git-post install
    """
    root = paths.repo_root(root_of(ctx))
    refused: list[str] = []
    left: list[str] = []  # hooks the pre-commit framework runs nexusmem-sync from
    runs: tuple[Path, int, str] | None = None
    names: list[str] = []
    for name in git_hooks.SYNC_HOOKS:
        framework = git_hooks.framework_runs(name, root)
        if framework is not None:
            # A block in its NAME.legacy would start a second sync at every commit beside the framework's:
            # none is written, and one `pre-commit install` moved there is taken out (below).
            left.append(name)
            runs = framework
            continue
        try:
            # Each hook is asked before any is written: a refused one (another tool's Python hook) leaves
            # none installed, and every refusal is said.
            git_hooks.check_install(name, root_of(ctx), force=force)
        except git_hooks.GitHookError as exc:
            refused.append(str(exc))
        names.append(name)
    _exit_on(ctx, refused, "Nothing was installed.")
    taken: list[str] = []
    for name in left:
        out = git_hooks.leave_to_framework(name, root)
        if out is not None and out[1] is not None:
            taken.append(out[1].name)
    last: git_hooks.InstallResult | None = None
    for name in names:
        try:
            result = git_hooks.install(name, root_of(ctx), force=force)
        except git_hooks.GitHookError as exc:  # a write that failed: the hooks installed before are said
            refused.append(str(exc))
            continue
        if last is not None:
            _report_install(last, "auto-sync hook", root, notes=False)
        last = result
    if last is not None:
        _report_install(last, "auto-sync hook", root)
    if left and runs is not None:
        echo_line(
            f"{' and '.join(left)}: left to the pre-commit framework, which syncs there already ({runs[2]} in"
            f" {runs[0]}, line {runs[1]}); it has no post-applypatch hook, so the one above syncs what `git am`"
            " applies."
        )
    if taken:
        echo_line(
            f"Took NexusMem's blocks out of {' and '.join(taken)}, where `pre-commit install` had moved them:"
            " they started a second sync at every commit."
        )
    _exit_on(ctx, refused)


def _exit_on(ctx: click.Context, errors: list[str], note: str | None = None) -> None:
    """Say each of ERRORS (then NOTE) and exit 1; nothing when there are none."""
    if not errors:
        return
    for why in errors:
        echo_line(f"Error: {why}", err=True)
    if note:
        echo_line(note, err=True)
    ctx.exit(1)


@git_post_group.command(name="stashed", hidden=True)
@repo_option
@click.pass_context
@library_errors
def git_post_stashed(ctx: click.Context) -> None:
    """The post-commit hook's question, asked when a stash entry holds a memory.db and this work tree has
    none: exit 1 saying so when the entry was stashed here (the hook then makes nothing: `git stash pop`
    would stop on it), 0 when it was stashed in another work tree of the repository (refs/stash is theirs
    too: a linked worktree builds its own memory, as it does beside the main work tree's)."""
    root = paths.repo_root(root_of(ctx))
    if paths.db_path(root).exists():
        return
    stashed = paths.stashed_memory(root, own=True)
    if stashed is not None:
        echo_line(f"nexusmem: memory not updated: {paths.stashed_text(root, stashed)}", err=True)
        ctx.exit(1)


@git_post_group.command(name="remove")
@repo_option
@click.pass_context
@library_errors
def git_post_remove(ctx: click.Context) -> None:
    """Take the auto-sync hook out, leaving the post-commit hook exactly as it was before.

    \b
    Example:
        nexusmem hook git-post remove
    """
    _remove(ctx, tuple(git_hooks.SYNC_HOOKS), "auto-sync hook")


@git_post_group.command(name="status")
@repo_option
@click.pass_context
@library_errors
def git_post_status(ctx: click.Context) -> None:
    """Show whether the post-commit, post-merge and post-applypatch hooks start the auto-sync, and with
    which nexusmem.

    \b
    Example:
        nexusmem hook git-post status
    """
    for name in git_hooks.SYNC_HOOKS:
        _report_status(git_hooks.status(name, root_of(ctx)), "sync --auto", "git-post", root_of(ctx))
    _report_record(root_of(ctx))
