"""The store's interface: what the layers above it may call, as Protocols.

The SQLite `Store` (nexusmem.store.db) implements all of them; a team store (PostgreSQL) implements the same
ones, so that retrieval, ranking, packing and linking never fork by backend. Each Protocol is what one
consumer needs, no more:

- `SearchStore`: what retrieval, ranking, packing and `show` read (nexusmem.retrieve, nexusmem.show);
- `LinkStore`: what the failure → fix linker reads and writes (nexusmem.link);
- `SyncStore`: what a sync writes: nodes, cursors, meta, one transaction per source (nexusmem.sync).

Ids are node ids (24 hex); times are epoch milliseconds; AS_OF filters on when the store first recorded a
node (created_at), never on when it happened (ts). Hygiene (forget, scrub, stale, review), the embedding
pass and `status` still take the concrete Store: they manage the SQLite file itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nexusmem.store.nodes import Kept, Pruned, SeenText, StoredNode, UpsertCounts
from nexusmem.store.releases import ReleaseRange

if TYPE_CHECKING:
    from nexusmem.nodes import Node


class SearchStore(Protocol):
    """Reads behind a query: candidates (BM25, CJK trigrams, vectors), the nodes themselves, their links."""

    # Where the store lives: the key of per-process caches (the in-memory vector copy of a long-running
    # MCP server) and what error messages name.
    path: Path
    # Whether retrieval may keep an in-memory copy of the vectors (read from the SQLite file at `path`);
    # False for the team store, whose k-NN is its HNSW index.
    in_memory_copy: bool
    # Who asks: the team member a team store's connection pushes and reads as (what `--author me` means
    # there); "" for local memory, whose nodes are all this machine's.
    member: str

    def schema_version(self) -> int: ...

    def get_meta(self, key: str) -> str | None: ...

    def deny_entries(self) -> list[dict[str, Any]]:
        """The deny-list entries this store holds, as stored (`show` tells a forgotten commit by them)."""
        ...

    # nodes
    def get(self, node_id: str) -> StoredNode | None: ...

    def get_many(self, ids: Sequence[str], *, light: bool = False) -> dict[str, StoredNode]:
        """LIGHT may leave out body (empty string): ranking reads hundreds of candidates."""
        ...

    def find_by_prefix(self, prefix: str) -> list[str]:
        """Up to 5 ids starting with PREFIX, in id order."""
        ...

    def commits_by_sha(self, prefix: str) -> list[str]:
        """Ids of up to 5 commits whose sha starts with PREFIX (lower-case hex), in sha order."""
        ...

    def written_order(self, ids: Sequence[str]) -> list[str]:
        """Those of IDS the store holds, in the order they were first written (a file's changelog entries: the
        order the file holds them); a store that keeps no such order gives them as IDS does."""
        ...

    def sections_under(self, source: str, head: str, limit: int) -> list[str]:
        """Ids of up to LIMIT doc sections of SOURCE whose natural key is HEAD's (a file's heading path) with
        its chunks or its subsections, in the order written (document order)."""
        ...

    def diffs_of(self, sha: str) -> list[tuple[str, str]]:
        """(id, ref) of the per-file diffs of the commit SHA (their ref is `sha:path`), in path order."""
        ...

    def files_of(self, node_id: str) -> list[str]: ...

    def files_of_many(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        """(node id, path) for every file of the nodes IDS."""
        ...

    def links_from(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(from id, to id, relation) of every link leaving one of IDS."""
        ...

    def links_to(self, node_id: str, limit: int) -> tuple[list[tuple[str, str]], int]:
        """(from id, relation) of the LIMIT links arriving at NODE_ID whose linking node is newest (a commit:
        the GitHub threads it closed, the changelog entries that describe it, the failures it fixed; a link
        from a node memory no longer holds last), and how many arrive in all."""
        ...

    def release_window(self, version: str) -> tuple[int, int | None] | None:
        """(when release VERSION was tagged, when the next one was, None if none), epoch ms; None when no
        version tag names it (or the store keeps no tags)."""
        ...

    def release_commit(self, version: str) -> str | None:
        """The sha of the commit release VERSION's tag names; None when no version tag names it (or the store
        keeps no tags)."""
        ...

    def newest_release(self, until: int | None = None) -> str | None:
        """The highest version a version tag names (tagged at or before UNTIL when given); None when no tag
        does (or the store keeps no tags)."""
        ...

    def first_release(self, until: int | None = None) -> str | None:
        """The lowest version a version tag names (tagged at or before UNTIL when given); None when no tag
        does (or the store keeps no tags)."""
        ...

    def release_after(self, version: str) -> str | None:
        """The version of the release that closes VERSION's window (release_window); None when there is none
        (or the store keeps no tags)."""
        ...

    def release_range(self, version: str, base: str | None = None) -> ReleaseRange | None:
        """The commits release VERSION brought (`git log PREVIOUS..VERSION`, from memory's parents; BASE as
        the previous release when given; every commit its tag reaches when no lower version is tagged, the
        first release); None when no version tag names it (or the store keeps no tags)."""
        ...

    def range_since(self, version: str) -> ReleaseRange | None:
        """The commits made since release VERSION (`git log VERSION..HEAD`, HEAD as the last sync read it);
        None when no version tag names it or HEAD is not known (or the store keeps no tags)."""
        ...

    def releases_within(self, shas: Iterable[str]) -> list[str]:
        """The versions whose tag names one of SHAS, lowest first (none when the store keeps no tags)."""
        ...

    def releases_above(self, version: str) -> list[tuple[str, str]]:
        """(version, sha) of the tags naming a higher version than VERSION in its family, lowest first."""
        ...

    def releases_between(self, found: ReleaseRange) -> list[str]:
        """The versions of FOUND's tag family tagged within its range, but its own and its base's, highest
        first (none when the store keeps no tags)."""
        ...

    def commit_held(self, sha: str) -> bool:
        """Whether memory holds commit SHA."""
        ...

    def generations(self, shas: Iterable[str]) -> dict[str, int]:
        """sha → the commit's generation (1 + its parents' highest) for those of SHAS that are numbered;
        empty when the store keeps no commit graph."""
        ...

    def shell_commands_between(
        self, start: int, end: int, newest: int | None = None
    ) -> list[tuple[str, str, int, str | None, int | None]]:
        """(id, command, ts, cwd, exit) of every shell command with START <= ts <= END (the NEWEST of them
        only, when given), oldest first."""
        ...

    def reference_time(self, as_of: int | None = None) -> int | None:
        """The newest event time held (recorded by AS_OF): the 'now' of recency, so that a query's answer
        depends only on the store and the question."""
        ...

    def newest_of_kind(self, kind: str, start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT newest nodes of KIND with START <= ts <= END, newest first (ties by id)."""
        ...

    def oldest_of_kind(self, kind: str, start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT oldest nodes of KIND with START <= ts <= END, oldest first (ties by id)."""
        ...

    def command_authors(self) -> list[tuple[str, str]]:
        """The distinct (author, author kind) of the shell commands held, by how many each ran, most first
        (a command recorded before authors existed is ("me", "human")): what a note names when --author
        matches none of them."""
        ...

    def commit_paths_ending(self, name: str) -> list[str]:
        """Every distinct path a commit touched that is NAME or ends in /NAME (`cJSON.c`, `retrieve/query.py`),
        in any case, sorted."""
        ...

    def commits_touching(self, paths: Sequence[str], start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT newest commits that touched one of PATHS with START <= ts <= END, newest first
        (ties by id)."""
        ...

    def renames_of(self, paths: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """(old path, new path, sha, ts) of every stored commit's rename from or to one of PATHS (a commit's
        meta `renames`), newest first (ties by sha)."""
        ...

    def size_hint(self) -> int:
        """Roughly how many nodes the store holds; cheap (the planner's guard)."""
        ...

    # full text
    def search_fts(
        self,
        match: str,
        limit: int,
        as_of: int | None = None,
        *,
        weights: Sequence[float] = ...,
        stemmed: bool = True,
        stem_match: str | None = None,
    ) -> list[str]:
        """Ids matching the FTS5 expression MATCH, best BM25 first (see search_fts_scored)."""
        ...

    def search_fts_scored(
        self,
        match: str,
        limit: int,
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
        weights: Sequence[float] = ...,
        stemmed: bool = True,
        stem_match: str | None = None,
    ) -> list[tuple[str, float]]:
        """(id, score) matching MATCH, best first; higher is better. WEIGHTS per column (title, body, change
        words, notes); STEMMED also asks the stemmed index with STEM_MATCH (MATCH when None, skipped when
        empty), for a small share of the score; SINCE/UNTIL keep event times in the window (inclusive)."""
        ...

    def count_matches(
        self,
        match: str,
        as_of: int | None = None,
        *,
        stemmed: bool = False,
        since: int | None = None,
        until: int | None = None,
    ) -> int:
        """How many nodes match MATCH (in the stemmed index when STEMMED; event times within SINCE/UNTIL)."""
        ...

    def count_stemmed(self, match: str, cap: int = 1000) -> int:
        """How many nodes the stemmed index matches for MATCH, counted up to CAP (enough for an IDF)."""
        ...

    def matching_each(self, matches: Sequence[str], ids: Sequence[str]) -> dict[str, set[str]]:
        """For each expression of MATCHES, those of IDS (a few) whose indexed text matches it: how strong the
        best candidates' match is."""
        ...

    def term_doc_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many nodes contain each term (0 when absent)."""
        ...

    def search_cjk(
        self, trigrams: Sequence[str], shorter: Sequence[str], limit: int, as_of: int | None = None
    ) -> list[str]: ...

    def search_cjk_scored(
        self, trigrams: Sequence[str], shorter: Sequence[str], limit: int, as_of: int | None = None
    ) -> list[tuple[str, float]]:
        """(id, score) from the CJK trigram index, best first."""
        ...

    # vectors
    def vector_identity_json(self) -> str | None:
        """Who made the stored vectors (JSON: provider, model, dim); None without vectors."""
        ...

    def has_vectors(self) -> bool: ...

    def vector_token_weights(self) -> str | None:
        """The token weights the built-in embedder pooled the vectors with (embed.builtin.TokenWeights as
        text); a query is pooled with the same ones. None for other models."""
        ...

    def vectors_generation(self) -> str:
        """Changes whenever a vector is added, replaced or deleted: the key of in-memory copies."""
        ...

    def search_vectors(
        self,
        blob: bytes,
        k: int,
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> list[tuple[str, float]]:
        """(id, cosine distance) of the K nearest to BLOB (float32), nearest first; SINCE/UNTIL filter event
        times after the k-NN."""
        ...

    def vector_distances(self, blob: bytes, ids: Sequence[str]) -> dict[str, float]:
        """id → cosine distance from BLOB (float32) of those of IDS that have a vector: no k-NN, the exact
        distance of nodes another list found."""
        ...

    def vector_rows(self, ids: Sequence[str]) -> dict[str, int]:
        """id → the row (nodes.seq) of its vector, for those of IDS that have one: what an in-memory copy of
        the vectors is indexed by. Empty for a store without an in-memory copy."""
        ...

    def distances_from(self, blob: bytes, vectors: Sequence[bytes]) -> list[float]:
        """The cosine distance of each of VECTORS (float32, as stored) from BLOB, by the index's own
        function: an in-memory copy's nearest get the distances the index would give them. Empty for a
        store without an in-memory copy."""
        ...

    def shell_neighbours(
        self, anchor: StoredNode, *, after: bool, limit: int, window_ms: int, as_of: int | None = None
    ) -> list[str]:
        """Ids of the LIMIT shell commands run nearest to ANCHOR (a shell command) strictly after it (AFTER)
        or before it, within WINDOW_MS, in its working directory (and, in a team store, by its member),
        nearest first."""
        ...

    def vector_hits_to_ids(
        self,
        hits: Sequence[tuple[int, float]],
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> list[tuple[str, float]]:
        """(row key, distance) hits of an in-memory copy as (id, distance), nearest first."""
        ...


class LinkStore(Protocol):
    """The linker's reads (range scans by event time) and its writes (links, its watermark).

    Call the writes inside a transaction of the caller.
    """

    def write_seq(self) -> int:
        """The store write sequence: bumped by every batch that writes nodes, never by the clock."""
        ...

    def min_ts_written_after(self, write_seq: int, kinds: Sequence[str]) -> int | None: ...

    def shell_commands_since(
        self, since_ms: int
    ) -> Iterator[tuple[str, int, str, str | None, int | None, int | None]]:
        """(id, ts, command, cwd, exit, duration ms or None) of every shell command with ts >= SINCE_MS,
        oldest first."""
        ...

    def failure_files_since(self, since_ms: int) -> list[tuple[str, str]]: ...

    def commit_files_since(self, since_ms: int) -> list[tuple[str, int, str]]: ...

    def commit_paths_ending(self, name: str) -> list[str]:
        """Every distinct path a commit touched that is NAME or ends in /NAME, in any case, sorted."""
        ...

    def commit_order(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """{commit id: (author time, generation: 0 when not numbered)} of the commits IDS."""
        ...

    def replays_since(self, since_ms: int) -> dict[str, int]:
        """{commit id: when its change was first made} of the commits made at or after SINCE_MS that replay a
        change made before them (meta `change_made`: a rebase's, a cherry-pick's)."""
        ...

    def import_blobs(self) -> dict[str, str]:
        """{path: blob sha} of every file the last structure pass parsed (the tracked files in a language it
        reads; empty when it never ran)."""
        ...

    def has_kind_between(self, kinds: Sequence[str], ts_from: int, ts_to: int | None = None) -> bool: ...

    def search_fts_kinds(
        self, match: str, kinds: Sequence[str], ts_from: int, ts_to: int
    ) -> list[tuple[str, int]]: ...

    def command_sessions(self, ids: Sequence[str]) -> dict[str, str]:
        """{shell_command id: the session that ran it} of IDS, for the commands that name one."""
        ...

    def session_discussions(
        self, sessions: Sequence[str], kinds: Sequence[str], ts_from: int, ts_to: int
    ) -> list[tuple[str, int, str, str]]:
        """(id, ts, session id, body) of the nodes of KINDS in [TS_FROM, TS_TO] of SESSIONS, in time order."""
        ...

    def node_bodies(self, ids: Sequence[str]) -> dict[str, str]: ...

    def failure_links_since(self, since_ms: int, relations: Sequence[str]) -> list[tuple[str, str, str]]: ...

    def add_links(self, links: Iterable[tuple[str, str, str]]) -> int: ...

    def delete_links(self, links: Iterable[tuple[str, str, str]]) -> int: ...

    def linked_through(self) -> int | None:
        """The write sequence the last link run saw (None: never ran)."""
        ...

    def set_linked_through(self, write_seq: int) -> None: ...

    def relink_from(self) -> int | None:
        """The oldest failure time whose link a prune removed since the last link run (None: none)."""
        ...

    def clear_relink(self) -> None: ...


class SyncStore(Protocol):
    """What a sync writes: nodes by content hash, each source's cursor and counts, a little meta."""

    def transaction(self) -> AbstractContextManager[None]:
        """One unit of work, rolled back on any error; nested, a savepoint."""
        ...

    def quick_check(self, seconds: float = ...) -> list[str] | None: ...

    def upsert(
        self, nodes: Iterable[Node], on_batch: Callable[[int], None] | None = None
    ) -> UpsertCounts: ...

    def prune_source(
        self,
        source: str,
        keep: Callable[[str], bool],
        *,
        heirs_after: int | None = None,
        named: Mapping[str, str] | None = None,
        seen: SeenText | None = None,
    ) -> Pruned: ...

    def count_source(self, source: str, *, shell: str | None = None) -> int: ...

    def commits_stored_by(self, shas: Sequence[str], seq: int) -> set[str]:
        """The SHAS whose git_commit node was stored at write sequence SEQ and not written since."""
        ...

    def commit_ancestors(self, shas: Sequence[str]) -> set[str]:
        """The commits memory holds that SHAS reach by their stored nodes' parents (SHAS too, when held)."""
        ...

    def commit_texts(self, shas: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(sha, time in ms, subject, message) of those of SHAS memory holds."""
        ...

    def commits_authored_at(self, ts_ms: int, seq: int) -> list[tuple[str, int]]:
        """(sha, when its change was first made) of every commit authored at TS_MS stored at write sequence
        SEQ and not written since."""
        ...

    def delete_source(self, source: str, *, shell: str | None = None) -> int: ...

    def delete_all_nodes(self) -> int: ...

    def history_nodes(self) -> list[StoredNode]:
        """The conversation turns, agent commands only a transcript recorded and GitHub threads."""
        ...

    def get_many(self, ids: Sequence[str], *, light: bool = False) -> dict[str, StoredNode]: ...

    def files_of_many(self, ids: Sequence[str]) -> list[tuple[str, str]]: ...

    def bookkeeping(self) -> list[Kept]:
        """What a rebuild must put back of every node (created_at, trust, superseded_by), or hand to its heir
        when its id does not come back."""
        ...

    def restore_bookkeeping(
        self,
        rows: list[Kept],
        heirs_after: int,
        *,
        named: Mapping[str, str] | None = None,
        seen: SeenText | None = None,
    ) -> int:
        """Put back what a rebuild took out (bookkeeping); how many doc sections' verdicts no heir took."""
        ...

    def node_count(self) -> int: ...

    def written_project_id(self) -> str | None:
        """The project id the newest node was written under (None: no node)."""
        ...

    def rekey_project(self, project_id: str) -> int:
        """Give the nodes written under another project id their ids under PROJECT_ID (a repository known by its
        path, moved); returns how many."""
        ...

    def leave_team_id(self, old: str) -> None:
        """Record that this memory no longer goes by project id OLD: the next team push deletes this member's
        rows under it."""
        ...

    # cursors
    def cursor(self, source: str) -> str | None: ...

    def synced_git_cursor(self) -> str | None:
        """The git source's cursor, or the one a migration, forget or scrub cleared until the next sync."""
        ...

    def record_sync(
        self, source: str, cursor: str | None, added: int, updated: int, removed: int, skipped: int
    ) -> None: ...

    def reset_cursors(self) -> None: ...

    def clear_cursor(self, source: str) -> None: ...

    def sources(self) -> list[dict[str, Any]]: ...

    # meta
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    # releases (sources.git.releases)
    def replace_releases(self, rows: Iterable[tuple[str, str, str, int]]) -> None:
        """ROWS: (tag name, version, commit sha, epoch ms) of every version tag."""
        ...

    # commit generations
    def fill_generations(
        self, *, changed: bool = True, written_after: int | None = None, removed: bool = True
    ) -> int:
        """Number the stored commits that have no generation yet; how many were numbered (CHANGED=False:
        the sync wrote no commit, so only a cheap check runs unless a stopped sync left some; WRITTEN_AFTER:
        the commits written since that write sequence are looked at first; REMOVED=False: none was
        pruned)."""
        ...
