"""Calling the GitHub REST API through the `gh` CLI: its login, its host, its pagination.

Why `gh` and not HTTP: the person's token stays where `gh auth login` put it (NexusMem never reads or
stores a credential), and `gh api` already follows `Link: rel="next"`. With `--paginate` it prints one JSON
array per page back to back (`[...][...]`); `--slurp` would wrap them but is missing from older gh builds
(Debian 12 ships 2.23), so the pages are split here, as they arrive: once LIMIT items are read the process
is stopped and no further page is requested.

Exit codes (cli.github.com/manual/gh_help_exit-codes): 0 ok, 1 failure, 2 cancelled, 4 authentication
required. A missing binary and a logged-out gh are `GhUnavailable` (the source is skipped quietly); any
other failure is `GhError` with the first line gh printed.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

GH = "gh"
# A page of 100 issues with long bodies is ~0.5 MB; a stuck network must not hold a sync for ever.
DEFAULT_TIMEOUT = 60.0
_AUTH = re.compile(r"auth login|not logged in|not logged into|HTTP 401|bad credentials", re.IGNORECASE)
_SLUG = re.compile(r"github\.com[:/]([^/\s]+)/(.+?)(?:\.git)?/?$")


class GhError(Exception):
    """gh ran but the call failed (HTTP 404, rate limit, bad output)."""


class GhUnavailable(GhError):
    """gh is not installed or not logged in: nothing to do, and nothing wrong with the project."""


def parse_slug(url: str) -> str | None:
    """'owner/repo' of a GitHub remote URL (https, ssh or scp form), else None."""
    m = _SLUG.search(url.strip())
    return f"{m.group(1)}/{m.group(2)}" if m else None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Never ask anything, never print colour or update notices into the JSON we parse.
    env.update({"GH_PROMPT_DISABLED": "1", "GH_NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1", "GH_PAGER": "cat"})
    env.pop("GH_FORCE_TTY", None)
    return env


def _split_pages(buf: str, decoder: json.JSONDecoder) -> tuple[list[Any], str]:
    """Whole JSON values at the start of BUF and the unparsed rest."""
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(buf) and buf[pos] in " \t\r\n":
            pos += 1
        if pos >= len(buf):
            return values, ""
        try:
            value, end = decoder.raw_decode(buf, pos)
        except json.JSONDecodeError:
            return values, buf[pos:]
        values.append(value)
        pos = end


def api_items(
    endpoint: str,
    params: Sequence[tuple[str, str]],
    *,
    cwd: Path,
    limit: int,
    timeout: float = DEFAULT_TIMEOUT,
) -> Iterator[dict[str, Any]]:
    """The items of a paginated REST list ENDPOINT (GET with PARAMS), at most LIMIT of them, in the API's
    order. Stops gh as soon as LIMIT items were read."""
    if limit <= 0:
        return
    argv = [GH, "api", "--method", "GET", endpoint, "--paginate"]
    for key, value in params:
        argv += ["-f", f"{key}={value}"]
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=str(cwd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=_env(),
            )
        except FileNotFoundError:
            raise GhUnavailable("gh CLI not found on PATH") from None
        except OSError as exc:
            raise GhUnavailable(f"gh CLI could not be started: {exc}") from None
        assert proc.stdout is not None
        decoder = json.JSONDecoder()
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        raw = b""
        text = ""
        given = 0
        finished = False  # gh closed its output: its exit code says whether every page came
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GhError(f"gh api {endpoint}: no answer within {timeout:.0f} s")
                if not sel.select(left):
                    continue
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    finished = True
                    break
                raw += chunk
                # Decode whole UTF-8 characters only; parse only when a page may have ended.
                try:
                    text += raw.decode("utf-8")
                    raw = b""
                except UnicodeDecodeError as exc:
                    if exc.start < len(raw) - 4:
                        raise GhError(f"gh api {endpoint}: output is not UTF-8") from None
                    text += raw[: exc.start].decode("utf-8")
                    raw = raw[exc.start :]
                if not text.rstrip().endswith(("]", "}")):
                    continue
                pages, text = _split_pages(text, decoder)
                for page in pages:
                    for item in page if isinstance(page, list) else [page]:
                        if isinstance(item, dict):
                            yield item
                            given += 1
                            if given >= limit:
                                return  # enough: the finally stops gh before it fetches another page
        finally:
            sel.close()
            if not finished:
                proc.kill()
            proc.stdout.close()
            try:
                code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        if code != 0:
            errors.seek(0)
            err = errors.read(4096).decode("utf-8", "replace")
            first = next((line.strip() for line in err.splitlines() if line.strip()), f"exit {code}")
            if code == 4 or _AUTH.search(err):
                raise GhUnavailable("gh is not logged in: run `gh auth login`")
            raise GhError(f"gh api call failed: {first}")
        if text.strip():
            from nexusmem.redact import redact_cut

            raise GhError(f"gh api {endpoint}: output is not JSON ({redact_cut(text.strip(), 60)!r})")
