"""What tests share besides fixtures (those stay in conftest.py): `from helpers import X`.

- helpers.git: real repositories (`git`, `init_repo`, `commit`, `short_sha`)
- helpers.cli: driving the CLI in-process (`run_cli`, `query_json`) or as the installed script (`run_script`)
- helpers.nodes: node factories for tests that build memory by hand (`shell_node`, `commit_node`, ...) and
  `write_commands` and `write_recent` (lines of the shell hook log)
- helpers.shell: `typed_in_bash` (commands typed at a real interactive bash with the prompt hook sourced)
- helpers.env: the isolated HOME every test runs in (used by conftest), and `local_zone` (a TZ for a test)
- helpers.embedding: `set_embedding` (the config section) and `cache_history` (three commits to embed)
- helpers.mcp, helpers.ollama_standin, helpers.chat_standin: import these by module (they start servers or
  load the MCP SDK, which most tests do not need)
"""

from __future__ import annotations

from helpers.cli import console_script, main_in_fresh_process, query_json, run_cli, run_script
from helpers.git import commit, git, init_repo, short_sha
from helpers.nodes import commit_node, node, shell_node, store_nodes, turn_node, write_commands, write_recent
from helpers.shell import typed_in_bash

__all__ = [
    "commit",
    "commit_node",
    "console_script",
    "git",
    "init_repo",
    "main_in_fresh_process",
    "node",
    "query_json",
    "run_cli",
    "run_script",
    "shell_node",
    "short_sha",
    "store_nodes",
    "turn_node",
    "typed_in_bash",
    "write_commands",
    "write_recent",
]
