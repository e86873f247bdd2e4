"""Which rule answers a question about recent work (`listing`): a file's changes, what was tried before a
fix, what was run next or before, the fix of a failure, how a run was got working, the failed runs, the
newest work of a time (retrieve.runs, retrieve.activity), tried in that order on the list retrieve.query
ranked."""

from __future__ import annotations

from dataclasses import dataclass

from nexusmem import timefmt
from nexusmem.retrieve import activity, order, runs, search, worktime
from nexusmem.retrieve.fuse import Evidence
from nexusmem.retrieve.question import Question
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore


@dataclass
class Listing:
    """What the recent-work rules put first for a question (listing), and what the answer says of it."""

    scored: list[tuple[StoredNode, float]]
    # What a rule listed in time order (the failures, or the newest work, of the question's time), and its note.
    listed: list[StoredNode]
    note: str | None
    count: int | None  # how many of the newest it asked for (asked_count), when it asked for the newest work
    answered_by: str | None
    pinned: list[str]
    whole: frozenset[str]  # the ids to pack all (what was tried before a fix, the fix and its patch)
    work: bool  # a listing of the newest work (activity_first)
    file_said: bool  # a question about one file's changes, answered by its own note (file_changes_first)


def listing(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    found: dict[str, Evidence],
    words: list[str],
    project: str | None,
    *,
    answered_by: str | None,
    pinned: list[str],
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None,
) -> Listing:
    """The recent-work rules for QUESTION over SCORED (ranked, with FOUND its evidence and WORDS its searched
    words), in order, each only when none before it answered (ANSWERED_BY: what a rule of retrieve.query put
    first): a file's changes, what was tried before a fix, what was run next or before, the fix of a failure,
    how a run was got working, the failed runs, the newest work. Each appends its note to QUESTION's."""
    listed: list[StoredNode] = []
    listing_note: str | None = None
    listing_count: int | None = None
    whole: frozenset[str] = frozenset()
    # "What did I commit in cJSON yesterday", "which tests failed in this repo": the project's own name says
    # which memory is asked (this one), not what about; the rules below read the question without it.
    names = worktime.project_names(store, project) if answered_by is None else frozenset()
    file_said = False  # a question about one file's changes, answered by its own note (file_changes_first)
    if answered_by is None and question.then is None and not question.failure:
        scored, listed, listing_note = activity.file_changes_first(
            store, scored, question, names, as_of=as_of, since=since, until=until
        )
        if listing_note is not None:
            file_said = True
            question.notes.append(listing_note)
            if not listed:
                listing_note = None  # nothing then: said, and answered by the ranking below
    attempts = (
        runs.attempts_before_fix(store, question, as_of=as_of, since=since, until=until, names=names)
        if question.then == "before" and answered_by is None and runs.asks_before_fix(question.text)
        else None
    )
    if attempts is not None:
        # In time order, the budget keeping the first (listing), and no fix riding up after its failure
        # (whole): the fix ends the listing, its patch after the commit.
        listed = [attempts.failure, *attempts.tried, *attempts.fixes]
        patches = {
            node.id: patch
            for node in attempts.fixes
            if node.kind == "git_commit"
            for patch in [runs.fix_patch(store, attempts.failure.ref, node.ref)]
            if patch is not None
        }
        patch_nodes = store.get_many(list(patches.values()), light=True)
        listed = [
            shown
            for node in listed
            for shown in (node, patch_nodes.get(patches.get(node.id, "")))
            if shown is not None
        ]
        scored = order.listed_first(scored, listed, keep=True)
        whole = frozenset(node.id for node in listed)
        answered_by = attempts.failure.id
        question.notes.append(
            f"first: what was run from `{attempts.failure.ref}` ({exit_text(attempts.failure)},"
            f" {timefmt.iso(attempts.failure.ts)}) up to the fix memory linked to it, oldest first"
        )
    elif question.then is not None:
        ceiling = scored[0][1] if scored else 0.0  # what the commands run next are put above
        scored, anchor = runs.with_neighbours(
            store,
            scored,
            question.then,
            found,
            latest=runs.AGAIN.search(question.text) is not None,
            failed=question.run_failure,
            between=runs.BETWEEN.search(question.text) is not None,
            asked=question.text,
            window=runs.sequence_window(store, question, as_of, since, until),
            timed=worktime.asked_window(question, since, until) is not None,
            as_of=as_of,
            since=since,
            until=until,
        )
        if anchor is not None:
            answered_by = anchor.id
            pinned = order.pin([node.id for node, value in scored if value > ceiling], pinned)
            when = "after" if question.then == "after" else "before"
            question.notes.append(
                f"first: what was run {when} `{anchor.ref}` ({exit_text(anchor)}, {timefmt.iso(anchor.ts)})"
            )
    if listed:
        answered_by = listed[0].id
    if answered_by is None and question.then is None and question.failure and runs.asks_fix(question.text):
        scored, listed, failures = runs.fixes_first(
            store, scored, question, as_of=as_of, since=since, until=until, names=names
        )
        if listed:
            answered_by = listed[0].id
            listing_note = (
                "first: the newest failures memory linked to their fix, each with what fixed it (the commit"
                " made after it, the passing re-run), newest first"
                if failures > 1
                else "first: the newest failure memory linked to its fix, with what fixed it (the commit made"
                " after it, the passing re-run)"
            )
            question.notes.append(listing_note)
    if answered_by is None and question.then is None and runs.asks_got_working(question.text):
        scored, listed, working = runs.got_working_first(
            store, scored, question, as_of=as_of, since=since, until=until, names=names
        )
        if working is not None:
            answered_by = listed[0].id
            listing_note = (
                f"first: what was done before `{working.ref}` passed ({timefmt.iso(working.ts)}), since it last"
                " failed, nearest first"
            )
            question.notes.append(listing_note)
    # A run that did not finish ("the training run ran out of GPU memory", "the feature build got killed")
    # is asked about as a failure here, though the learned step does not read it as one (question.failure).
    asks_failures = question.run_failure and question.then is None and answered_by is None
    said = set(search.terms(worktime.without_names(question.search_text, names))) if names else None
    unnamed = words if said is None else [w for w in words if w in said]
    if asks_failures:
        scored, listed, span, passed = runs.failed_runs_first(
            store, scored, question, as_of=as_of, since=since, until=until, names=names, author=author
        )
        if listed:
            listing_note = (
                f"no run of {span}; first: its runs, newest first (the newest passed, exit 0)"
                if passed
                else f"first: the failed runs of {span}"
                + ("" if ", newest first" in span else ", newest first")
            )
            question.notes.append(listing_note)
        elif span:  # none of the runs it names ran in the time it names (failed_runs_first)
            listing_note = span
            question.notes.append(listing_note)
    recent_work = False  # a listing of the newest work (activity_first)
    if asks_failures and not listed and not worktime.a_subject(unnamed):
        scored, listed, span = runs.failures_first(
            store, scored, question, as_of=as_of, since=since, until=until, author=author
        )
        listing_note = (
            f"first: the commands that failed {span}" + ("" if ", newest first" in span else ", newest first")
            if listed
            else f"no recorded command {worktime.by_author(author)}failed {span}"
        )
        question.notes.append(listing_note)
    elif (
        not asks_failures
        and answered_by is None
        and activity.asks_recent_work(question, unnamed, since, until)
    ):
        recent_work = True
        scored, listed, span = activity.activity_first(
            store, scored, question, as_of=as_of, since=since, until=until, author=author
        )
        listing_count = activity.asked_count(question.text)
        listing_note = f"first: {span}" if listed else activity.nothing_done(author, span)
        question.notes.append(listing_note)
    if listed:
        answered_by = listed[0].id
    return Listing(
        scored, listed, listing_note, listing_count, answered_by, pinned, whole, recent_work, file_said
    )


def exit_text(node: StoredNode) -> str:
    """How a shell command NODE exited, as a note says it: "exit 1", or "exit unknown"."""
    code = node.meta.get("exit")
    return "exit unknown" if code is None else f"exit {code}"
