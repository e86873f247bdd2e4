"""A stand-in for the `gh` CLI on PATH (gh itself cannot log in here): `gh api` replays recorded REST JSON.

The recorded data lives in DATA_DIR as `<endpoint with / as __>.json` (one JSON list: every item the
endpoint has). `gh api --method GET ENDPOINT -f k=v --paginate` answers as GitHub + gh do: `since` keeps
items updated at or after it, `sort=updated` with `direction`, `per_page` pages, and with --paginate every
page printed as its own JSON array back to back (`[...][...]`), without it the first page only. Every call's
argv is appended to DATA_DIR/calls.jsonl. A file DATA_DIR/logged-out makes it exit 4 with gh's message.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

SCRIPT = r"""
import json, os, sys, time
data = os.environ["FAKE_GH_DATA"]
argv = sys.argv[1:]
with open(os.path.join(data, "calls.jsonl"), "a") as f:
    f.write(json.dumps(argv) + "\n")
if os.path.exists(os.path.join(data, "logged-out")):
    sys.stderr.write("To get started with GitHub CLI, please run:  gh auth login\n"
                     "Alternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.\n")
    sys.exit(4)
if not argv or argv[0] != "api":
    sys.stderr.write("unknown command\n"); sys.exit(1)
params, endpoint, paginate, method = {}, None, False, "GET"
i = 1
while i < len(argv):
    a = argv[i]
    if a == "--paginate": paginate = True
    elif a in ("-f", "-F", "--raw-field", "--field"):
        k, _, v = argv[i + 1].partition("="); params[k] = v; i += 1
    elif a in ("--method", "-X"):
        method = argv[i + 1]; i += 1
    elif endpoint is None and not a.startswith("-"): endpoint = a
    i += 1
if os.environ.get("FAKE_GH_ERROR"):  # what a failing gh printed, as it printed it
    sys.stderr.write(os.environ["FAKE_GH_ERROR"] + "\n"); sys.exit(1)
if params and method != "GET":
    sys.stderr.write("gh: Not Found (HTTP 404)\n"); sys.exit(1)  # -f without --method GET is a POST
path = os.path.join(data, endpoint.replace("/", "__") + ".json")
if not os.path.exists(path):
    sys.stderr.write("gh: Not Found (HTTP 404)\n"); sys.exit(1)
items = json.load(open(path))
if "since" in params:
    items = [x for x in items if x.get("updated_at", "") >= params["since"]]
if params.get("sort") == "updated":
    items.sort(key=lambda x: (x["updated_at"], x.get("number", 0)), reverse=params.get("direction", "desc") == "desc")
per = int(params.get("per_page", 30))
pages = [items[i:i + per] for i in range(0, len(items), per)] or [[]]
for n, page in enumerate(pages if paginate else pages[:1]):
    sys.stdout.write(json.dumps(page, indent=1 if n % 2 else None))
    sys.stdout.flush()
    time.sleep(float(os.environ.get("FAKE_GH_PAGE_DELAY", "0")))
"""


def install(bin_dir: Path, data_dir: Path) -> Path:
    """Write the fake `gh` into BIN_DIR (put it first on PATH and FAKE_GH_DATA=DATA_DIR in the env)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "gh"
    script.write_text(f"#!{sys.executable}\n{SCRIPT}", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def record(data_dir: Path, endpoint: str, items: list[dict[str, Any]]) -> None:
    (data_dir / (endpoint.replace("/", "__") + ".json")).write_text(json.dumps(items), encoding="utf-8")


def calls(data_dir: Path) -> list[list[str]]:
    path = data_dir / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def issue(
    number: int,
    title: str,
    body: str,
    updated: str,
    *,
    state: str = "open",
    comments: int = 0,
    labels: tuple[str, ...] = (),
    pull: bool = False,
    merged_at: str | None = None,
    login: str = "octocat",
) -> dict[str, Any]:
    """One item of GET /repos/{o}/{r}/issues as GitHub returns it (the fields NexusMem reads, and a few more)."""
    item: dict[str, Any] = {
        "url": f"https://api.github.com/repos/acme/widget/issues/{number}",
        "html_url": f"https://github.com/acme/widget/{'pull' if pull else 'issues'}/{number}",
        "id": 1000 + number,
        "node_id": f"I_kw{number}",
        "number": number,
        "title": title,
        "user": {"login": login, "id": 1, "type": "User"},
        "labels": [{"id": i, "name": name, "color": "d73a4a"} for i, name in enumerate(labels)],
        "state": state,
        "locked": False,
        "comments": comments,
        "created_at": "2026-10-01T09:00:00Z",
        "updated_at": updated,
        "closed_at": updated if state == "closed" else None,
        "author_association": "MEMBER",
        "body": body,
    }
    if pull:
        item["pull_request"] = {
            "url": f"https://api.github.com/repos/acme/widget/pulls/{number}",
            "html_url": f"https://github.com/acme/widget/pull/{number}",
            "merged_at": merged_at,
        }
    return item


def comment(login: str, body: str, created: str) -> dict[str, Any]:
    return {
        "id": abs(hash(body)) % 10**8,
        "user": {"login": login},
        "body": body,
        "created_at": created,
        "updated_at": created,
        "author_association": "NONE",
    }


def env_for(bin_dir: Path, data_dir: Path) -> dict[str, str]:
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "FAKE_GH_DATA": str(data_dir)}
