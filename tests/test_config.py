"""config.json: defaults written once, validation errors that name the file and the dotted key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusmem import config
from nexusmem.errors import ConfigError


def test_config_defaults_roundtrip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    assert config.write_defaults(path)
    assert config.load(path) == config.DEFAULTS
    assert not config.write_defaults(path)  # never overwritten
    path.write_text(json.dumps({"sources": {"docs": {"enabled": "yes"}}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'sources\.docs\.enabled' must be boolean"):
        config.load(path)
    path.write_text(json.dumps({"limits": {"maxBodyChars": -1}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="must not be negative"):
        config.load(path)
    path.write_text(json.dumps({"sources": {"diff": {"skip": ["a", 3]}}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="list of strings"):
        config.load(path)
    path.write_text("[]", encoding="utf-8")  # it said "'' must be an object": a key with no name
    with pytest.raises(ConfigError, match=r"config\.json: the file must be an object, not list"):
        config.load(path)
    path.write_text(json.dumps({"sources": []}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config\.json: 'sources' must be an object, not list"):
        config.load(path)
    path.write_text(json.dumps({"limits": {"maxBodyChars": 500}}), encoding="utf-8")
    merged = config.load(path)
    assert merged["limits"]["maxBodyChars"] == 500 and merged["query"]["budget"] == 2000


def test_redaction_cannot_be_turned_off(tmp_path: Path) -> None:
    # Every config written before the key was removed holds it as true: still loads, the key is dropped.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"redaction": {"enabled": True}, "query": {"budget": 900}}), encoding="utf-8")
    loaded = config.load(path)
    assert "redaction" not in loaded and loaded["query"]["budget"] == 900
    path.write_text(json.dumps({"redaction": {"enabled": False}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config\.json: 'redaction' was removed .*always redacted"):
        config.load(path)
    assert "redaction" not in config.DEFAULTS


def test_the_diff_skip_list_init_once_wrote_means_todays(tmp_path: Path) -> None:
    """Earlier inits wrote "build/*" into every config's diff skip list; a package named build (pypa/build's
    src/build/) then lost every change. That exact list is read as today's default; a list the user edited
    is theirs and kept as written."""
    path = tmp_path / "config.json"
    written = json.loads(json.dumps(config.DEFAULTS))
    written["sources"]["diff"]["skip"] = list(config._FORMER_DIFF_SKIP)
    path.write_text(json.dumps(written), encoding="utf-8")
    skip = config.load(path)["sources"]["diff"]["skip"]
    assert "build/*" not in skip and skip == config.DEFAULTS["sources"]["diff"]["skip"]
    assert "dist/*" in skip and "vendor/*" in skip
    edited = [*config._FORMER_DIFF_SKIP, "*.csv"]
    path.write_text(json.dumps({"sources": {"diff": {"skip": edited}}}), encoding="utf-8")
    assert config.load(path)["sources"]["diff"]["skip"] == edited


def test_the_docs_exclude_list_init_once_wrote_means_todays(tmp_path: Path) -> None:
    """Earlier inits wrote a docs exclude list without the test folders; a Markdown linter's test inputs
    were then read as its documentation. That exact list is read as today's; an edited one is kept."""
    path = tmp_path / "config.json"
    written = json.loads(json.dumps(config.DEFAULTS))
    written["sources"]["docs"]["exclude"] = list(config._FORMER_DOCS_EXCLUDE)
    path.write_text(json.dumps(written), encoding="utf-8")
    exclude = config.load(path)["sources"]["docs"]["exclude"]
    assert exclude == config.DEFAULTS["sources"]["docs"]["exclude"] and "test/*" in exclude
    edited = [*config._FORMER_DOCS_EXCLUDE, "drafts/*"]
    path.write_text(json.dumps({"sources": {"docs": {"exclude": edited}}}), encoding="utf-8")
    assert config.load(path)["sources"]["docs"]["exclude"] == edited


@pytest.mark.parametrize(
    "written",
    [
        ["*.md", "*.mdx", "*.markdown"],
        ["*.md", "*.mdx", "*.markdown", "*.rst"],
        ["*.md", "*.mdx", "*.markdown", "*.rst", "*.[1-9]"],
        ["*.md", "*.mdx", "*.markdown", "*.rst", "*.adoc", "*.asciidoc", "*.[1-9]"],
        ["*.md", "*.mdx", "*.markdown", "*.rst", "*.adoc", "*.asciidoc", "*.org", "*.[1-9]"],
    ],
)
def test_a_docs_include_list_an_earlier_init_wrote_reads_todays_formats(
    repo: Path, isolated_home: Path, written: list[str]
) -> None:
    """Each earlier release's init wrote its docs include list into config.json, which was honoured for
    ever: after an upgrade such a memory never read reStructuredText, AsciiDoc, Org, RDoc or man pages, and
    doctor said nothing. Those exact lists mean today's; an edited one is kept."""
    from helpers import commit, query_json, run_cli

    # RDoc: a format none of those lists holds (today's default does).
    commit(repo, "docs", {"docs/guide.rdoc": "= Deploying\n\nRun the zebrafish deploy step.\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["sources"]["docs"]["include"] = written
    path.write_text(json.dumps(data), encoding="utf-8")
    run_cli("-C", str(repo), "sync", "--no-embed", "--rebuild")
    titles = [i["title"] for i in query_json(repo, "zebrafish deploy step")["items"]]
    assert "docs/guide.rdoc — Deploying" in titles, titles
    data["sources"]["docs"]["include"] = ["*.md"]  # chosen: kept
    path.write_text(json.dumps(data), encoding="utf-8")
    assert config.load(path)["sources"]["docs"]["include"] == ["*.md"]


def test_a_config_that_is_not_a_regular_file_is_a_clear_error(tmp_path: Path) -> None:
    # A link to /dev/zero was read without end (the kernel stopped it at ~24 GB), a FIFO made every command
    # wait for ever, and a link to nothing silently meant the defaults.
    import os

    path = tmp_path / "config.json"
    path.symlink_to(os.devnull.replace("null", "zero"))
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(path)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(path)
    path.unlink()
    path.symlink_to(tmp_path / "gone.json")
    with pytest.raises(ConfigError, match=r"gone\.json, which does not exist"):
        config.load(path)
    path.unlink()
    path.write_text(json.dumps({"query": {"budget": 900}}) + " " * (2 << 20), encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than"):
        config.load(path)


def test_a_secret_typed_into_the_wrong_key_is_not_echoed(tmp_path: Path) -> None:
    # The error goes to the terminal and, from the post-commit sync, into .nexusmem/auto-sync.log.
    token = "sk_live_" + "wfHI4q9ZxT2mL7pR8sV3nB6k"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"stale": {"maxAgeDays": token}}))
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert "'stale.maxAgeDays' must be integer, not string" in str(caught.value)
    assert token not in str(caught.value) and "a string of 32 characters" in str(caught.value)
    # nor one of no known format; a misspelt word is still shown, to be seen and fixed
    path.write_text(json.dumps({"limits": {"maxBodyChars": "Myf5U3kSvwwK7x"}}))
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert "Myf5U3kSvwwK7x" not in str(caught.value)
    path.write_text(json.dumps({"embedding": {"provider": "olama"}}))
    with pytest.raises(ConfigError, match='got "olama"'):
        config.load(path)


@pytest.mark.parametrize(
    ("key", "value"), [("query.budget", 0), ("query.budget", 200_000), ("embedding.batchSize", 0)]
)
def test_numbers_the_commands_cannot_use_are_refused_where_they_are_written(
    tmp_path: Path, key: str, value: int
) -> None:
    # `query.budget: 0` printed "0 of 33 match(es) shown" with no word of why; the CLI and MCP take 50 at least.
    section, name = key.split(".")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({section: {name: value}}))
    with pytest.raises(ConfigError, match=f"'{key}' must be between"):
        config.load(path)


def test_a_config_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Notepad and PowerShell 5 (`Set-Content -Encoding UTF8`) write a BOM before UTF-8: the file is the
    user's edit all the same, read as written (it was "Unexpected UTF-8 BOM (decode using utf-8-sig)")."""
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"query": {"budget": 1234}}).encode("utf-8"))
    assert config.load(path)["query"]["budget"] == 1234


def test_a_config_from_a_newer_release_says_so_before_naming_its_new_keys(tmp_path: Path) -> None:
    """A newer release's config (a higher version, keys this one does not know) was refused as "unknown
    key 'newthing'", and doctor's fix was to edit the file by hand."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"version": 99, "newthing": {"on": True}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="'version' 99 is newer than this NexusMem") as caught:
        config.load(path)
    assert "newthing" not in str(caught.value)
    path.write_text(json.dumps({"newthing": {"on": True}}), encoding="utf-8")  # same version: a typo
    with pytest.raises(ConfigError, match="unknown key 'newthing'"):
        config.load(path)


def test_hand_edits_no_release_writes_are_refused_in_plain_words(tmp_path: Path) -> None:
    """A key written twice silently took the last value, `"version": 0` was accepted, and a null was
    reported in Python's words ("must be an object, not NoneType", "must be string, not NoneType (null)")."""
    path = tmp_path / "config.json"
    path.write_text('{"query": {"budget": 2000, "budget": 3000}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"key \"budget\" is written twice in one object"):
        config.load(path)
    path.write_text(json.dumps({"version": 0}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'version' must be 1 (to \d+ )?\(got 0\)"):
        config.load(path)
    path.write_text(json.dumps({"sources": None}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'sources' must be an object, not null$"):
        config.load(path)
    path.write_text(json.dumps({"team": {"url": None}}), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert "NoneType" not in str(caught.value) and str(caught.value).endswith("not null"), caught.value
