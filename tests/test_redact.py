"""Secret redaction: every fixture secret is replaced by its typed placeholder, everything else survives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nexusmem.redact import _TOKEN_RULES, KINDS, PATTERNS, PLACEHOLDER_RE, placeholder, redact, redact_counts

FIXTURES = Path(__file__).parent / "fixtures"


def _secret_rows() -> list[tuple[str, str, str]]:
    rows = []
    for raw in (FIXTURES / "secrets.txt").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        line, kind, secret = raw.split("\t")
        rows.append((line, kind, secret))
    return rows


def _plain_lines() -> list[str]:
    lines = []
    for raw in (FIXTURES / "not_secrets.txt").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or (raw.startswith("# ") and raw[2:3].isupper()):
            continue
        lines.append(raw)
    return lines


SECRET_ROWS = _secret_rows()
PLAIN_LINES = _plain_lines()


def test_fixtures_are_big_enough() -> None:
    assert len(SECRET_ROWS) >= 50
    assert len(PLAIN_LINES) >= 50
    for line, _kind, secret in SECRET_ROWS:
        assert secret in line


def test_every_placeholder_type_has_a_fixture() -> None:
    corpus = json.loads((FIXTURES / "redaction_corpus.json").read_text(encoding="utf-8"))
    produced: set[str] = set()
    for row in corpus["secrets"]:
        produced |= set(redact_counts(row["context"].replace("{s}", row["value"]))[1])
    assert set(KINDS) <= {kind for _, kind, _ in SECRET_ROWS} | produced


@pytest.mark.parametrize(("line", "kind", "secret"), SECRET_ROWS, ids=[r[1] for r in SECRET_ROWS])
def test_secret_is_replaced_and_the_rest_of_the_line_kept(line: str, kind: str, secret: str) -> None:
    out = redact(line)
    assert secret not in out
    assert placeholder(kind) in out
    # Exactly the secret is replaced: the command, flags, URL, quotes and surrounding text all survive.
    assert out == line.replace(secret, placeholder(kind))


@pytest.mark.parametrize("line", PLAIN_LINES)
def test_ordinary_text_is_unchanged(line: str) -> None:
    assert redact(line) == line


def test_whole_files_redact_like_their_lines() -> None:
    text = "\n".join(line for line, _, _ in SECRET_ROWS)
    expected = "\n".join(line.replace(secret, placeholder(kind)) for line, kind, secret in SECRET_ROWS)
    assert redact(text) == expected
    plain = "\n".join(PLAIN_LINES)
    assert redact(plain) == plain


def test_idempotent() -> None:
    texts = [line for line, _, _ in SECRET_ROWS] + PLAIN_LINES
    texts.append("\n".join(texts))
    for text in texts:
        once = redact(text)
        assert redact(once) == once


def test_placeholders_are_never_re_redacted() -> None:
    for kind in KINDS:
        ph = placeholder(kind)
        for text in (
            ph,
            f"export GITHUB_TOKEN={ph}",
            f'password: "{ph}"',
            f"https://user:{ph}@example.com/x",
            f"mysql -uroot -p{ph} db",
            f"curl -u admin:{ph} https://x",
            f'curl -H "Authorization: Bearer {ph}" https://x',
            f"--token {ph}",
        ):
            assert redact(text) == text, text


def test_counts_per_type() -> None:
    text = "\n".join(line for line, _, _ in SECRET_ROWS)
    out, counts = redact_counts(text)
    expected: dict[str, int] = {}
    for _, kind, _ in SECRET_ROWS:
        expected[kind] = expected.get(kind, 0) + 1
    assert counts == expected
    assert len(PLACEHOLDER_RE.findall(out)) == len(SECRET_ROWS)
    assert redact_counts("nothing to see here") == ("nothing to see here", {})


def test_empty_string() -> None:
    assert redact("") == ""
    assert redact_counts("") == ("", {})


RSA_BODY = "\n".join(
    [
        "MIIEowIBAAKCAQEAFAKEFAKEFAKEexampleNotARealKey0123456789abcdefghijkl",
        "mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/FAKEFAKEFAKE00",
        "ThisIsMadeUpBase64ForTestsOnlyAndDecodesToNothingUsefulAtAll000==",
    ]
)


def test_multiline_private_key_block() -> None:
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n-----END RSA PRIVATE KEY-----"
    text = f"Added deploy key (oops)\n\n{key}\nsee docs/deploy.md\n"
    out = redact(text)
    assert out == "Added deploy key (oops)\n\n«redacted:private-key»\nsee docs/deploy.md\n"
    for part in RSA_BODY.splitlines():
        assert part not in out


@pytest.mark.parametrize("label", ["OPENSSH", "EC", "ENCRYPTED", "DSA", ""])
def test_private_key_block_in_a_diff(label: str) -> None:
    header = f"-----BEGIN {label} PRIVATE KEY-----".replace("  ", " ")
    footer = f"-----END {label} PRIVATE KEY-----".replace("  ", " ")
    body = "".join(f"+{part}\n" for part in RSA_BODY.splitlines())
    patch = f"@@ -0,0 +1,5 @@\n+{header}\n{body}+{footer}\n+# end of file\n"
    out = redact(patch)
    assert out == "@@ -0,0 +1,5 @@\n+«redacted:private-key»\n+# end of file\n"


def test_truncated_private_key_block_is_still_redacted() -> None:
    body = "".join(f"+{part}\n" for part in RSA_BODY.splitlines())
    patch = f"+-----BEGIN OPENSSH PRIVATE KEY-----\n{body}"  # the patch was cut before END
    out = redact(patch)
    assert out.startswith("+«redacted:private-key»")
    for part in RSA_BODY.splitlines():
        assert part not in out


def test_an_aws_key_pair_pasted_with_its_labels_loses_both_halves() -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8RtFAKEx"
    out = redact(f"Access key ID: AKIAQ7W9E2R4T6Y8FAKE Secret access key: {secret}")
    assert out == "Access key ID: «redacted:aws-key» Secret access key: «redacted:secret»"


def _key_lines() -> list[str]:
    """A made-up PEM key body: 26 lines of 64 base64 characters and a shorter last one."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    lines = ["".join(alphabet[(i * 7 + j * 13 + i * j) % 64] for j in range(64)) for i in range(26)]
    return ["MIIEowIBAAKCAQEA" + lines[0][16:], *lines[1:], "tEuovyrbwUKEWbIz9GM46JQ="]


def test_a_hunk_that_edits_a_committed_key_keeps_none_of_its_lines() -> None:
    # No BEGIN line in the hunk: one line of the key changed, three lines of context on each side, and
    # git's hunk header quoting a line above the hunk.
    key = _key_lines()
    patch = (
        "diff --git a/deploy/key.pem b/deploy/key.pem\n--- a/deploy/key.pem\n+++ b/deploy/key.pem\n"
        f"@@ -9,7 +9,7 @@ {key[7]}\n"
        + "".join(f" {line}\n" for line in key[8:11])
        + f"-{key[11]}\n+{key[11][::-1]}\n"
        + "".join(f" {line}\n" for line in key[12:15])
    )
    out = redact(patch)
    assert (
        out.startswith("diff --git a/deploy/key.pem b/deploy/key.pem\n") and "«redacted:private-key»" in out
    )
    for line in key[7:15]:
        assert line[:40] not in out and line[::-1][:40] not in out


@pytest.mark.parametrize("indent", ["    ", "\t", "  \t"])
def test_a_hunk_that_edits_an_indented_key_keeps_none_of_its_lines(indent: str) -> None:
    """A key in YAML (a Kubernetes Secret's or a Helm chart's `tls.key: |`) is indented: a hunk showing the
    middle of it, with no BEGIN line, kept every line, as did the lines above its END line."""
    key = _key_lines()
    patch = (
        "diff --git a/k8s/secret.yaml b/k8s/secret.yaml\n--- a/k8s/secret.yaml\n+++ b/k8s/secret.yaml\n"
        "@@ -12,13 +12,13 @@ stringData:\n"
        + "".join(f" {indent}{line}\n" for line in key[4:7])
        + "".join(f"-{indent}{line}\n" for line in key[7:12])
        + "".join(f"+{indent}{line[::-1]}\n" for line in key[7:12])
        + "".join(f" {indent}{line}\n" for line in key[12:15])
        + "@@ -30,4 +30,4 @@ stringData:\n"
        + "".join(f" {indent}{line}\n" for line in key[-3:])
        + f" {indent}-----END RSA PRIVATE KEY-----\n-  namespace: a\n+  namespace: b\n"
    )
    out = redact(patch)
    assert out.startswith("diff --git a/k8s/secret.yaml b/k8s/secret.yaml\n") and "+  namespace: b" in out
    for line in key[4:15] + key[-3:]:
        assert line[:40] not in out and line[::-1][:40] not in out, line


def test_a_certificate_appended_after_a_key_leaves_the_keys_last_lines_out() -> None:
    key = _key_lines()
    patch = (
        "@@ -25,3 +25,6 @@\n"
        + "".join(f" {line}\n" for line in key[-3:])
        + " -----END RSA PRIVATE KEY-----\n+-----BEGIN CERTIFICATE-----\n+MIIBszCCAVmgAwIBAgIU\n"
    )
    out = redact(patch)
    assert (
        out
        == "@@ -25,3 +25,6 @@\n«redacted:private-key»\n+-----BEGIN CERTIFICATE-----\n+MIIBszCCAVmgAwIBAgIU\n"
    )


def test_two_long_lines_of_hex_or_one_of_base64_are_not_a_key() -> None:
    text = "sha256:" + "ab12" * 16 + "\n" + "cd34" * 16 + "\nintegrity " + "QmFzZTY0" * 8 + "\n"
    assert redact(text) == text


def test_public_key_blocks_are_kept() -> None:
    text = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFAKE\n-----END PUBLIC KEY-----"
    assert redact(text) == text


def test_unicode_around_secrets_survives() -> None:
    for line, kind, secret in SECRET_ROWS:
        text = f"Déploiement ✓ 部署 — 🚀\n{line} — fini İstanbul ✓"
        assert redact(text) == text.replace(secret, placeholder(kind))
    # A character whose lower() changes the string's length takes the slower case-insensitive path.
    text = "İİİ\npassword: FakePassw0rd!x İ"
    assert redact(text) == "İİİ\npassword: «redacted:password» İ"
    assert (
        redact("名前 — export DB_PASSWORD=Fake密码Passw0rd ✓")
        == "名前 — export DB_PASSWORD=«redacted:password» ✓"
    )
    assert redact("İ curl -H 'Authorization: Bearer FAKEtoken123' x") == (
        "İ curl -H 'Authorization: Bearer «redacted:bearer-token»' x"
    )


def test_url_password_keeps_scheme_user_and_host() -> None:
    out = redact("postgres://app:FakePass123@db.example.com:5432/app")
    assert out == "postgres://app:«redacted:password»@db.example.com:5432/app"
    assert redact("redis://:FakePass123@cache:6379") == "redis://:«redacted:password»@cache:6379"


def test_mysql_dash_p_only_for_mysql_like_tools() -> None:
    assert redact("mysql -uroot -pFakePass1 app") == "mysql -uroot -p«redacted:password» app"
    assert redact("mysql -uroot -p app") == "mysql -uroot -p app"
    for text in (
        "mkdir -p a/b",
        "ssh -p 22 host",
        "git log -p",
        "docker run -p 8080:80 x",
        "psql -p 5432 db",
    ):
        assert redact(text) == text


def test_tool_flags_after_a_newline_or_separator() -> None:
    assert redact("ls\nmysql -uroot -pFakePass1 app") == "ls\nmysql -uroot -p«redacted:password» app"
    assert redact("true && sshpass -p FakePass1 ssh h") == "true && sshpass -p «redacted:password» ssh h"
    assert redact("mysql -uroot app; mkdir -pv x") == "mysql -uroot app; mkdir -pv x"
    assert (
        redact("+mysql -uroot -pFakePass1 db\n") == "+mysql -uroot -p«redacted:password» db\n"
    )  # a diff line
    assert redact("bash -c 'mysqldump -pFakePass1 db'") == "bash -c 'mysqldump -p«redacted:password» db'"
    assert redact("x=$(curl -u me:FakePass1 https://x)") == "x=$(curl -u me:«redacted:password» https://x)"


def test_multiline_shell_command() -> None:
    text = "docker run \\\n  -e API_TOKEN=FakeToken0123456789 \\\n  -p 8080:80 acme/web"
    assert redact(text) == "docker run \\\n  -e API_TOKEN=«redacted:token» \\\n  -p 8080:80 acme/web"


@pytest.mark.slow
@pytest.mark.parametrize(
    "chunk",
    [
        "a",
        "--password ",
        "mysql -p",
        "mysql ",
        "://",
        "://a:",
        "password: ",
        "token=",
        "TOKEN=",
        "Authorization: Bearer ",
        "x-api-key: ",
        "eyJhbGciOi.",
        "-----BEGIN PRIVATE KEY-----",
        "AKIA",
        "sk-",
        "curl -u a:",
        '"',
        "'\\",
    ],
)
def test_one_megabyte_lines_do_not_blow_up(chunk: str) -> None:
    line = (chunk * (1_000_000 // len(chunk) + 1))[:1_000_000]
    out = redact(line)
    assert redact(out) == out


def test_patterns_table_is_literal_prefixed() -> None:
    """Each rule starts with its literal, which the engine finds with str.find (see the module docstring);
    the token formats are scanned by their literals too (grouped by first character)."""
    for rule in (*PATTERNS, *_TOKEN_RULES):
        if rule.finder is not None:
            continue
        assert rule.literal, rule.name
        if rule.lowered:
            assert rule.literal == rule.literal.lower(), rule.name
        pattern = re.sub(r"^(?:\(\?P<\w+>)+", "", rule.pattern.pattern)
        assert pattern.startswith((re.escape(rule.literal), rule.literal)), rule.name


def test_a_secret_in_a_path_ends_where_its_folder_or_name_does() -> None:
    """A file name is not a line: a header rule reads from the name's start, a token ends at the extension,
    and a base64 secret can run across a slash. A path without a secret comes back as it was."""
    from nexusmem.redact import path_text, redact_path

    cases = {
        "keys/AKIAIDVWTFKTANGPVYQE.json": "keys/«redacted:aws-key».json",
        "pkg/DD-API-KEY: 40c36b8a8e36e4acf1395b2529b97bd5.py": "pkg/DD-API-KEY: «redacted:api-key».py",
        "x/aws configure set aws_secret_access_key VRuq4xOSh1H02IHP7j0YnQKRiIQf2/EfTIyBfHyc.txt": (
            "x/aws configure set aws_secret_access_key «redacted:aws-secret-key».txt"
        ),
    }
    for path, expected in cases.items():
        assert redact_path(path) == expected
        assert redact(path_text(path)) != path_text(path)  # the one-scan check sees it too
    for clean in (
        "src/components/Button/index.tsx",
        "docs/v1.2/guide.md",
        ".github/workflows/ci.yml",
        "a.b.c",
    ):
        assert redact_path(clean) == clean and redact(path_text(clean)) == path_text(clean)


def test_hex_digits_alone_are_never_taken_for_a_secret() -> None:
    """Node labels of hex digits alone (commit ids, timestamps) are not read by redaction (nodes._HEX): no
    rule may tell a secret by its digits without a name or prefix before it. The corpus's hex secrets (each
    redacted in its context elsewhere) and random hex of every usual length, bare, stay as they are."""
    import random

    corpus = json.loads(
        (Path(__file__).parent / "fixtures" / "redaction_corpus.json").read_text(encoding="utf-8")
    )
    bare = [row["value"] for row in corpus["secrets"] if re.fullmatch(r"[0-9a-fA-F]+", row["value"])]
    assert len(bare) >= 10
    rng = random.Random(7)
    bare += [
        "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(n)) for n in (7, 16, 32, 40, 64, 128)
    ]
    assert [value for value in bare if redact(value) != value] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A password a sentence names, made of words and a number (8+ characters of three classes): kept
        # before, as it reads like an identifier (`MyServiceAccount`, `development_settings_v2`).
        ("the password is PurpleMonkeyDishwasher42", "the password is «redacted:password»"),
        ("use password Purple-Monkey-Dishwasher-42 to log in", "use password «redacted:password» to log in"),
        ("my token was Purple-Monkey-Dishwasher-42", "my token was «redacted:token»"),
        (
            "I used the password Purple-Monkey-Dishwasher-42 to log in.",
            "I used the password «redacted:password» to log in.",
        ),
        ("the staging db password is Monkey42.", "the staging db password is «redacted:password»."),
        ("the secret is Blue_Ocean_Tiger_7", "the secret is «redacted:secret»"),
        # Words a sentence says of a password, and names in code, are not one.
        ("the password is settings.DbPassword2", "the password is settings.DbPassword2"),
        ("the password is DB_PASSWORD_V2", "the password is DB_PASSWORD_V2"),
        ("the password is development_settings_v2", "the password is development_settings_v2"),
        ("the token is MyServiceAccount", "the token is MyServiceAccount"),
        ("use password authentication2 instead", "use password authentication2 instead"),
    ],
)
def test_a_password_of_words_and_a_number_that_a_sentence_names(text: str, expected: str) -> None:
    """docs/hygiene.md: a value a sentence names counts when it looks like a password (8+ characters of
    three classes); `PurpleMonkeyDishwasher42` has three, but was taken for an identifier and kept."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # What the password is for, a short word for it, an arrow: each was stored as written.
        (
            "Same here, password for the staging is hunter2-Zeta-2026!",
            "Same here, password for the staging is «redacted:password»!",
        ),
        (
            "the password of the staging box is Kx9mQ2vLp8",
            "the password of the staging box is «redacted:password»",
        ),
        (
            "password for root@db.internal.example: Kx9mQ2vLp8",
            "password for root@db.internal.example: «redacted:password»",
        ),
        ("the pass for prod is `Purple-Monkey-42`.", "the pass for prod is `«redacted:password»`."),
        ("pw is Kx9mQ2vLp8", "pw is «redacted:password»"),
        ("pwd: Kx9mQ2vLp8", "pwd: «redacted:password»"),
        ("PW=Kx9mQ2vLp8 ./deploy.sh", "PW=«redacted:password» ./deploy.sh"),
        ("new password → Kx9mQ2vLp8", "new password → «redacted:password»"),
        ("password -> Kx9mQ2vLp8 (rotated)", "password -> «redacted:password» (rotated)"),
        # ... and what a sentence says of a password, or code, keeps its words.
        (
            "the password for the account is reset by the admin",
            "the password for the account is reset by the admin",
        ),
        ("password of 12 characters is required", "password of 12 characters is required"),
        ("the pass for prod is in 1Password", "the pass for prod is in 1Password"),
        ("pwd: /home/dev/src", "pwd: /home/dev/src"),
        ("pwd is $HOME", "pwd is $HOME"),
        ("pw = PatternWaiter()", "pw = PatternWaiter()"),
        ("pw: Optional[str] = None", "pw: Optional[str] = None"),
        ("bypass for staging is Enabled2024", "bypass for staging is Enabled2024"),
        ("password → keychain", "password → keychain"),
    ],
)
def test_a_password_a_sentence_names_around_its_word(text: str, expected: str) -> None:
    """docs/hygiene.md: "password for X is V", "pw is V", "pwd: V", "password → V" are judged as "the
    password is V" is (a value that looks like a password); the rest of the sentence is kept."""
    assert redact(text) == expected


# A password of words and digits, the digits ending its words or standing after a separator: each was kept
# (`Hunter2-Zeta-55` parses as the identifier parts Hunter2, Zeta, 55), while `Hunter2-Zeta-555` and
# `Xyz-Staging-99` were replaced.
SUFFIXED_PASSWORDS = [
    "Hunter2-Staging-55",
    "Hunter2-Zeta-55",
    "Hunter2-Zeta-07",
    "Hunter2-Zeta-1",
    "Hunter2-Zeta_55",
    "Hunter2-Zeta.55",
    "Hunter2-Zeta#55",
    "Hunter2Zeta-55",
    "hunter2-Zeta-55",
    "Hunter2-zeta-55",
    "Zeta-Hunter2",
    "Hunter2-Zeta-2026",
    "Xyz-Staging-99",
]
PASSWORD_CUES = [
    ("password for the staging is {}", "password"),
    ("the password of the staging box is {}", "password"),
    ("the password is {}", "password"),
    ("my token was {}", "token"),
    ("use password {} to log in", "password"),
    ("pw: {}", "password"),
    ("new password → {}", "password"),
    ('echo "password for the staging is {}" > /dev/null', "password"),
]


@pytest.mark.parametrize("value", SUFFIXED_PASSWORDS)
@pytest.mark.parametrize(("cue", "kind"), PASSWORD_CUES)
def test_a_password_of_words_and_digits_is_replaced_whatever_its_suffix(
    cue: str, kind: str, value: str
) -> None:
    """docs/hygiene.md: after a password cue, a value of both cases and a digit is a password whatever ends
    it (`-55`, `-1`, `_55`, `.55`, `#55`); a sentence's closing `!` or `.` is kept."""
    assert redact(cue.format(value)) == cue.format(placeholder(kind))
    for end in "!." if cue.endswith("{}") else "":
        assert redact(cue.format(value) + end) == cue.format(placeholder(kind)) + end


@pytest.mark.parametrize(
    "text",
    [
        # Names in code and words without both cases, or without a digit, stay as written.
        "the password is settings.DbPassword2",
        "the password is Settings.Db2",
        "the password is DB_PASSWORD_V2",
        "the password is development_settings_v2",
        "the password is hunter2-zeta-55",
        "the token is MyServiceAccount",
        "the token is My-Service-Account",
        "the password is v1.2.3-rc1",
        "pw: Optional[str] = None",
        "the password for the account is reset by the admin",
        "the pass for prod is in 1Password",
    ],
)
def test_names_and_words_after_a_password_cue_are_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A password holding punctuation is replaced whole after NAME= and in prose ...
        ("DB_PASSWORD=Zq7(Lm4pWx9v in .env", "DB_PASSWORD=«redacted:password» in .env"),
        ("my db password is Kx9#mQ2&vLp8 ok", "my db password is «redacted:password» ok"),
        # ... but a shell command separator ends a shell value: the next command is kept.
        ("export PGPASSWORD=hunter2&&psql -h db", "export PGPASSWORD=«redacted:password»&&psql -h db"),
        ("DB_PASS=devpass1;npm run dev", "DB_PASS=«redacted:password»;npm run dev"),
        ("API_KEY=abcd1234|tee k", "API_KEY=«redacted:api-key»|tee k"),
        # Code after NAME= (no spaces), a redirection after `password`, a Markdown reference: kept.
        ('token=strings.Split(x,";")', 'token=strings.Split(x,";")'),
        (
            "password=hashlib.sha256(pw.encode()).hexdigest()",
            "password=hashlib.sha256(pw.encode()).hexdigest()",
        ),
        ("echo password 2>/dev/null", "echo password 2>/dev/null"),
        ("the [password generator][1] docs", "the [password generator][1] docs"),
        # A version a lockfile gives a package named like a secret is kept; a secret shaped like one is not.
        ('"jsonwebtoken": "^9.0.0",', '"jsonwebtoken": "^9.0.0",'),
        ('"x-token": "1.0.0-beta.2"', '"x-token": "1.0.0-beta.2"'),
        ("DB_PASSWORD=2.0.1-Hunter2Secret", "DB_PASSWORD=«redacted:password»"),
        # An arrow function is code; `=>` inside a password is not.
        ("const password=e=>Kz9(e)", "const password=e=>Kz9(e)"),
        ("PGPASSWORD=Kx9m=>Q2vLp8 psql", "PGPASSWORD=«redacted:password» psql"),
        # A decoded user:password pair (a random token too), not a host and its port.
        (
            "echo Y2k6YThmNWYxNjdmNDRmNDk2NGU2Yzk5OGRlZTgyNzExMGM= | base64 -d",
            "echo «redacted:encoded-secret» | base64 -d",
        ),
        ("echo bG9jYWxob3N0OjgwODAvYXBpL3Yx | base64 -d", "echo bG9jYWxob3N0OjgwODAvYXBpL3Yx | base64 -d"),
    ],
)
def test_a_value_glued_to_punctuation(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A header's name is case-insensitive: the value of a cookie header in any spelling is read.
        ("CoOkIe: session=Kx9mQ2vLp8Zq7Lm4pWx9vT3b", "CoOkIe: session=«redacted:cookie»"),
        ("x-SET-cOoKiE: sid=Kx9mQ2vLp8Zq7Lm4pWx9vT3b; Path=/", "x-SET-cOoKiE: sid=«redacted:cookie»; Path=/"),
        # ...with what the header's other spellings keep kept.
        ("SET-cOOKIE: lang=en-US; Path=/; SameSite=Lax", "SET-cOOKIE: lang=en-US; Path=/; SameSite=Lax"),
        ("CoOkIe: _ga=GA1.2.1234567890.1600000000", "CoOkIe: _ga=GA1.2.1234567890.1600000000"),
        ("const sessionCoOkIe = req.headers.cookie", "const sessionCoOkIe = req.headers.cookie"),
        # A name's lower() of another length (İ) before it: found all the same.
        ("İ CoOkIe: sid=Kx9mQ2vLp8Zq7Lm4pWx9vT3b", "İ CoOkIe: sid=«redacted:cookie»"),
    ],
)
def test_a_cookie_header_in_any_case(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A token of a known format cut by a line break (a wrapped paste), whole again across it.
        ("my token ghp_R8xk2LmQ9vTz4WpN7s\nHb3JcY6dFa1GeU5oKi ok", "my token «redacted:github-token» ok"),
        ("ghp_R8xk2LmQ9vTz\r\nN7sHb3JcY6dF\r\na1GeU5oKiXyZ", "«redacted:github-token»"),  # CRLF, three lines
        ("id AKIA2E0A8F3B\n244C9E7Q, done", "id «redacted:aws-key», done"),
        ("xoxb-1234567890123-12345\n67890123-AbCdEfGhIjKlMnOpQrStUvWx", "«redacted:slack-token»"),
        (
            "k=sk-ant-api03-" + "a" * 40 + "\n" + "b" * 53 + "AA end",
            "k=«redacted:anthropic-key» end",
        ),
        # Whole on its line: the next line is not taken.
        ("ghp_R8xk2LmQ9vTz4WpN7sHb3JcY6dFa1GeU5oKi\nNextLine here", "«redacted:github-token»\nNextLine here"),
        ("AKIA2E0A8F3B244C9E7Q\nABCDEF1234 ok", "«redacted:aws-key»\nABCDEF1234 ok"),
        # Cut, but the next line does not complete the format: nothing of it is taken.
        ("the prefix ghp_abc\nHello world", "the prefix ghp_abc\nHello world"),
        ("AKIA2E0A\nSHORT", "AKIA2E0A\nSHORT"),
        ("sk-ant-api03-" + "a" * 40 + "\nplain words", "«redacted:anthropic-key»\nplain words"),
        # A prefix ending its line is no token cut there: a commit line after it is kept whole.
        (
            "Classic tokens start with ghp_\n2e8426e9f0c1a2b3c4d5e6f7a8b9c0d1e2f3a4b5 fix: rotate",
            "Classic tokens start with ghp_\n2e8426e9f0c1a2b3c4d5e6f7a8b9c0d1e2f3a4b5 fix: rotate",
        ),
        # ...nor a head whose next line makes it longer than a GitHub token; cut early, it is one.
        (
            "ghp_R8xk2LmQ9v\n2e8426e9f0c1a2b3c4d5e6f7a8b9c0d1e2f3a4b5",
            "ghp_R8xk2LmQ9v\n2e8426e9f0c1a2b3c4d5e6f7a8b9c0d1e2f3a4b5",
        ),
        ("see ghp_R\r\n8xk2LmQ9vTz4WpN7sHb3JcY6dFa1GeU5oKi", "see «redacted:github-token»"),
    ],
)
def test_a_token_cut_by_a_line_break(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


def test_mask_keeps_the_line_break_of_a_cut_token() -> None:
    from nexusmem.redact import mask

    text = "x ghp_R8xk2LmQ9vTz4WpN7s\nHb3JcY6dFa1GeU5oKi y"
    assert mask(text) == "x " + "*" * 22 + "\n" + "*" * 18 + " y"


def test_redacted_then_cut_never_keeps_a_token_or_half_a_placeholder() -> None:
    """A text cut to a limit is redacted first (a token the cut ended no longer matches), and the cut leaves
    out a placeholder it would split: a piece of one is not one."""
    from nexusmem.redact import cut_redacted, redact_cut, said_line

    token = "ghp_rkao4aLWMPJIs8wKmzhxvh1oMTdBWdRNEhjl"
    text = "x" * 30 + " with " + token + " done"
    assert redact(text[:50]) == text[:50]  # cut first, the token's start is kept as it was
    assert redact_cut(text, 50) == "x" * 30 + " with "  # the placeholder the cut would split is left out
    assert redact_cut(text, 100) == "x" * 30 + " with «redacted:github-token» done"
    assert cut_redacted("ab «redacted:github-token» c", 26) == "ab «redacted:github-token»"
    # A model's reason or a server's page is read to 4,000 characters: blanks collapse, and a token the
    # reading cut ended would have reached the line shown.
    assert token[:20] not in said_line(" " * 3950 + "key " + token, 300)
    assert said_line("key " + token, 300) == "key «redacted:github-token»"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x\\nghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "x\\n«redacted:github-token»"),
        ("tok%3Dghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "tok%3D«redacted:github-token»"),
        ('{"log":"ok\\nAKIAQM4I2HZ4UEP3ENTH"}', '{"log":"ok\\n«redacted:aws-key»"}'),
        ("a\\txoxb-2048613795-4096271835-ZWD1IAEov4QbKDFq1Y3gqSmP", "a\\t«redacted:slack-token»"),
        ("q=1%26sk_live_4eC39HqLyjWDarjtT1zdp7dc", "q=1%26«redacted:stripe-key»"),
        (
            '{"log":"ok\\x0aghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"}',
            '{"log":"ok\\x0a«redacted:github-token»"}',
        ),
        ('{"log":"ok\\u000aAKIAQM4I2HZ4UEP3ENTH"}', '{"log":"ok\\u000a«redacted:aws-key»"}'),
        ("printf 'a\\012ghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF'", "printf 'a\\012«redacted:github-token»'"),
        (
            "cb%253Ftoken%253Dghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF",
            "cb%253Ftoken%253D«redacted:github-token»",
        ),
        ("t%3dghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "t%3d«redacted:github-token»"),
        # Glued to a word, no escape: not a token of its own (a longer identifier), as before.
        ("xghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "xghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"),
        ("%zzghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "%zzghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"),
        ("a253Dghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "a253Dghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"),
        ("a\\09ghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF", "a\\09ghp_wI0b26r08QZJi6gkfsUFRDzsLb5ER8BoFzQF"),
    ],
)
def test_a_token_right_after_an_escape_is_redacted(text: str, expected: str) -> None:
    """The letter of a `\\n`/`\\t` escape or the digits of a `%3D` before a token glued it to a longer word,
    and the token was kept whole."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A prompt that ends in a colon, quoted: the quote after the colon closes it, and was read as the
        # one opening a value (`… "password:"«redacted:password»"password"`).
        (
            'Issue #451: Check for "password:" as password prompt instead of "password"',
            'Issue #451: Check for "password:" as password prompt instead of "password"',
        ),
        ('expect("password:") then send it', 'expect("password:") then send it'),
        ('the prompt "Password:" is matched', 'the prompt "Password:" is matched'),
        ('expect "password:" { send "$pw\\r" }', 'expect "password:" { send "$pw\\r" }'),
        ("read -s -p 'Password: ' pw", "read -s -p 'Password: ' pw"),
        ('"password:".encode()', '"password:".encode()'),
        # ... while a value after such a key is one: after another separator (a JSON key ending in a
        # colon), or shaped like a password after a blank; a word glued to the quote is read as before.
        ('"password:": "Hunter2-Zeta-55"', '"password:": "«redacted:password»"'),
        ('{"user": "bob", "password:": "Kx9mQ2vLp8"}', '{"user": "bob", "password:": "«redacted:password»"}'),
        ('"password:": hunter2', '"password:": «redacted:password»'),
        ('echo "password:"Kx9mQ2vLp8', 'echo "password:"«redacted:password»'),
        ('"password:" Kx9mQ2vLp8.', '"password:" «redacted:password».'),
        # A key not inside a string is read as before: its quote opens the value.
        ('password: "hunter2 is long"', 'password: "«redacted:password»"'),
        ('{"password": "s3cr3tV@lue"}', '{"password": "«redacted:password»"}'),
        ('password:"Kx9mQ2vLp8"', 'password:"«redacted:password»"'),
        ("it's password:'Kx9mQ2vLp8'", "it's password:'«redacted:password»'"),
        # ... also after a stray quote earlier on the line (httpx's CHANGELOG), as a word follows the quote.
        (
            'or `httpx.URL(path="/\')`, username="tom", password="123 456")`',
            'or `httpx.URL(path="/\')`, username="tom", password="«redacted:password»")`',
        ),
    ],
)
def test_a_quoted_prompt_ending_in_a_colon_is_kept_and_a_value_after_it_is_not(
    text: str, expected: str
) -> None:
    """docs/hygiene.md: a quoted prompt whose colon is inside its quotes (pexpect, expect, Ansible, `read
    -p`) names no value; the value of a key written so (`"password:": V`) is still replaced."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The answer to a quoted password prompt, written as a literal on the prompt's line (pexpect, expect,
        # paramiko, a list of prompt/answer pairs): a pair, a concatenation, the next send call.
        ('("password:", "Kx9mQ2vLp8")', '("password:", "«redacted:password»")'),
        (
            'expect_pairs=[("Password:", "Tr0ub4dor&3")]',
            'expect_pairs=[("Password:", "«redacted:password»")]',
        ),
        (
            'child.expect("Password:"); child.sendline("Kx9mQ2vLp8")',
            'child.expect("Password:"); child.sendline("«redacted:password»")',
        ),
        (
            "p.expect('password:'); p.sendline('Zq7Lm4pWx9v')",
            "p.expect('password:'); p.sendline('«redacted:password»')",
        ),
        (
            "child.expect('password:', timeout=120); child.sendline(b'Zq7Lm4pWx9v')",
            "child.expect('password:', timeout=120); child.sendline(b'«redacted:password»')",
        ),
        (
            'expect "password:" { send "Kx9mQ2vLp8\\r" }',
            'expect "password:" { send "«redacted:password»\\r" }',
        ),
        (
            'expect "Password: "; send -- "Tr0ub4dor&3\\n"',
            'expect "Password: "; send -- "«redacted:password»\\n"',
        ),
        (
            'child.sendline("password:" + "Kx9mQ2vLp8")',
            'child.sendline("password:" + "«redacted:password»")',
        ),
        (
            'chan.recv_until("Password:"); chan.send("Zq7Lm4pWx9v\\n")',
            'chan.recv_until("Password:"); chan.send("«redacted:password»\\n")',
        ),
        ('"(?i)password:": "Kx9mQ2vLp8"', '"(?i)password:": "«redacted:password»"'),
        # ... not a variable or an expression, nor a word, a sentence or another prompt.
        ('expect "password:" { send "$pw\\r" }', 'expect "password:" { send "$pw\\r" }'),
        ('expect "password:" { send -- "$env(PASS)\\r" }', 'expect "password:" { send -- "$env(PASS)\\r" }'),
        (
            'child.expect("password:"); child.sendline(password)',
            'child.expect("password:"); child.sendline(password)',
        ),
        (
            'child.expect("password:"); child.sendline(os.environ["PW"])',
            'child.expect("password:"); child.sendline(os.environ["PW"])',
        ),
        ('("Password:", "Enter your password")', '("Password:", "Enter your password")'),
        (
            'child.expect("password:"); child.sendline("yes")',
            'child.expect("password:"); child.sendline("yes")',
        ),
        ('child.expect(["password:", "Password:"])', 'child.expect(["password:", "Password:"])'),
        ('child.expect(["password:", "[Pp]assphrase"])', 'child.expect(["password:", "[Pp]assphrase"])'),
        (
            'child.expect(["Password:", "Are you sure (yes/no)?", "Permission denied, try again."])',
            'child.expect(["Password:", "Are you sure (yes/no)?", "Permission denied, try again."])',
        ),
        ('log.info("password:", "%s" % masked)', 'log.info("password:", "%s" % masked)'),
        ('"password:" + "\\n"', '"password:" + "\\n"'),
    ],
)
def test_the_answer_written_after_a_quoted_password_prompt_is_redacted(text: str, expected: str) -> None:
    """docs/hygiene.md: a literal that answers a quoted password prompt on its line (after `,`, `:` or `+`,
    or in the next send call) is a secret when it looks like a password or a random key."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The answer on the line after the prompt's line, as expect and pexpect scripts write it (and a diff
        # shows it, each line after its `+` or its context blank).
        ('expect "password:"\nsend "Kx9mQ2vLp8\\r"\n', 'expect "password:"\nsend "«redacted:password»\\r"\n'),
        (
            "child.expect('password:')\nchild.sendline('Zq7Lm4pWx9v')",
            "child.expect('password:')\nchild.sendline('«redacted:password»')",
        ),
        (
            "    child.expect('Password: ', timeout=30)\r\n    child.sendline(b'Zq7Lm4pWx9v')\r\n",
            "    child.expect('Password: ', timeout=30)\r\n    child.sendline(b'«redacted:password»')\r\n",
        ),
        (
            '+expect "password:"\n+send -- "Tr0ub4dor&3\\r"\n',
            '+expect "password:"\n+send -- "«redacted:password»\\r"\n',
        ),
        (
            ' expect "Password:"\n-send "Kx9mQ2vLp8\\r"\n+send "$pw\\r"\n',
            ' expect "Password:"\n-send "«redacted:password»\\r"\n+send "$pw\\r"\n',
        ),
        (
            'expect "password:" {\n    send "Kx9mQ2vLp8\\r"\n}',
            'expect "password:" {\n    send "«redacted:password»\\r"\n}',
        ),
        (
            "p.expect('passphrase:');\np.sendline('Zq7Lm4pWx9v')",
            "p.expect('passphrase:');\np.sendline('«redacted:password»')",
        ),
        # ... under the same conditions as on the prompt's line: a variable, an expression, a word are kept.
        ('expect "password:"\nsend "$pw\\r"', 'expect "password:"\nsend "$pw\\r"'),
        ('expect "password:"\nsend -- "$env(PASS)\\r"', 'expect "password:"\nsend -- "$env(PASS)\\r"'),
        (
            "child.expect('password:')\nchild.sendline(password)",
            "child.expect('password:')\nchild.sendline(password)",
        ),
        (
            "child.expect('password:')\nchild.sendline(os.environ['PW'])",
            "child.expect('password:')\nchild.sendline(os.environ['PW'])",
        ),
        (
            "child.expect('Password:')\nchild.sendline('yes')",
            "child.expect('Password:')\nchild.sendline('yes')",
        ),
        # Only the line right after, and only a call that starts it: not a line further on, nor a line that
        # is not a send call, nor a send after a prompt that is not the line's last thing.
        (
            'expect "password:"\n\nsend "Kx9mQ2vLp8\\r"',
            'expect "password:"\n\nsend "Kx9mQ2vLp8\\r"',
        ),
        (
            "child.expect('password:')\nlog('sent'); child.sendline('Zq7Lm4pWx9v')",
            "child.expect('password:')\nlog('sent'); child.sendline('Zq7Lm4pWx9v')",
        ),
        (
            "check('password:', 'login:')\nout.write('Zq7Lm4pWx9v')",
            "check('password:', 'login:')\nout.write('Zq7Lm4pWx9v')",
        ),
        (
            'Check for "password:" as password prompt\nsend "Kx9mQ2vLp8\\r"',
            'Check for "password:" as password prompt\nsend "Kx9mQ2vLp8\\r"',
        ),
    ],
)
def test_the_answer_on_the_line_after_a_quoted_password_prompt_is_redacted(text: str, expected: str) -> None:
    """docs/hygiene.md: the first argument of a send call that starts the line right after a line ending in a
    quoted password prompt is a secret when it is a literal shaped like a password or a random key."""
    assert redact(text) == expected


def test_the_rules_version_moves_with_the_rules() -> None:
    """RULES_VERSION was bumped by hand, and nothing tied it to the rules: a new keyword or pattern shipped
    under the old version, and `doctor`/`status` never told a memory written before it to run `nexusmem
    scrub`. The rules' fingerprint is recorded next to the version; a change to them fails here until both
    are looked at."""
    from nexusmem import redact_engine
    from nexusmem.redact import RULES_FINGERPRINT, RULES_VERSION

    now = redact_engine.rules_fingerprint()
    assert now == RULES_FINGERPRINT, (
        f"The redaction rules changed (nexusmem/redact_engine.py): their fingerprint is {now}, and"
        f" nexusmem/redact.py records {RULES_FINGERPRINT} for RULES_VERSION {RULES_VERSION}. In"
        f" nexusmem/redact.py, if the rules now redact something the rules of version {RULES_VERSION} did"
        f" not, set RULES_VERSION = {RULES_VERSION + 1} (its comment says what they redact now: `doctor` and"
        f" `status` then tell every memory written before to run `nexusmem scrub`); then set"
        f' RULES_FINGERPRINT = "{now}". A change that redacts nothing new (a refactor, a narrower rule)'
        " sets RULES_FINGERPRINT alone."
    )


def test_the_rules_fingerprint_sees_a_keyword_a_pattern_and_a_handler_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fingerprint is computed from the engine's own rules, so each kind of change moves it."""
    from nexusmem import redact_engine

    before = redact_engine.rules_fingerprint()
    with monkeypatch.context() as patch:
        patch.setattr(redact_engine, "_PLACEHOLDERS", redact_engine._PLACEHOLDERS | {"hunter2"})
        assert redact_engine.rules_fingerprint() != before  # a keyword list
    first = redact_engine.PATTERNS[0]
    wider = redact_engine.Rule(
        first.name, first.kinds, first.source + "?", first.handler, literal=first.literal
    )
    with monkeypatch.context() as patch:
        patch.setattr(redact_engine, "PATTERNS", (wider, *redact_engine.PATTERNS[1:]))
        assert redact_engine.rules_fingerprint() != before  # a pattern
    assign = next(r for r in redact_engine.PATTERNS if r.name == "assign:pass")
    with monkeypatch.context() as patch:
        patch.setattr(assign, "handler", redact_engine._value("password"))
        assert redact_engine.rules_fingerprint() != before  # which handler a rule calls
    source = Path(redact_engine.__file__).read_text(encoding="utf-8")
    assert "if len(value) < 16 or" in source  # the weak words' threshold, read from the code
    with monkeypatch.context() as patch:
        changed = source.replace("if len(value) < 16 or", "if len(value) < 12 or")
        patch.setattr(Path, "read_text", lambda self, encoding=None: changed)
        assert redact_engine.rules_fingerprint() != before  # a threshold in a handler
    assert redact_engine.rules_fingerprint() == before


def test_the_rules_fingerprint_is_the_same_in_every_process() -> None:
    """Sets are sorted and caches left out: another hash seed, or texts redacted first, change nothing."""
    import os
    import subprocess
    import sys

    from nexusmem import redact_engine

    redact("password=Kx9mQ2vLp8Zr4TbW mysql -psecret ghp_" + "a" * 36)
    here = redact_engine.rules_fingerprint()
    code = "from nexusmem import redact_engine; print(redact_engine.rules_fingerprint())"
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == here


# Long lines with no line break that made a rule read to the end of the line from every position of it, or
# from every match on it: each took from a minute to hours before, under a second now.
_LONG_LINES = {
    "a line saying base64 that decodes nothing": "x = 'data:application/wasm;base64,{b64}'",
    "a .pgpass mention before 600 KB of base64": "cp .pgpass /tmp; {b64}",
    "30,000 query parameters on one line": "{query}",
}


@pytest.mark.parametrize("shape", list(_LONG_LINES))
def test_a_long_line_is_redacted_in_one_pass(shape: str) -> None:
    """What a minified bundle or an inlined binary holds (one line of hundreds of KB) is redacted as fast as the
    same bytes in lines: the rules read at most a bounded stretch past each place they try."""
    import subprocess
    import sys

    code = (
        "import base64, json, sys\n"
        "from nexusmem.redact import redact\n"
        "b64 = base64.b64encode(bytes(range(256)) * 1800).decode()\n"
        "query = 'key=value&token=Kx9mQ2vLp8Zr&' * 30000\n"
        f"text = {_LONG_LINES[shape]!r}.format(b64=b64, query=query)\n"
        "out = redact(text)\n"
        "print(json.dumps([len(text), len(out), out.count('«redacted:')]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )  # a hang guard, not a speed figure (benchmarks/bench_redact.py --long-lines measures)
    assert done.returncode == 0, done.stderr
    size, kept, redacted = json.loads(done.stdout)
    if shape == "30,000 query parameters on one line":
        assert redacted == 30000  # every token= value, and nothing else
    else:
        assert (kept, redacted) == (size, 0)
