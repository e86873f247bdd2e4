"""The redaction engine's literal prefilter and lazy compilation (nexusmem/redact_engine.py, _PREFILTER_MAX).

A pass over the text is skipped when the text holds none of its rules' literals, and a regex is compiled
only when a text could match it. That must never change what is redacted: here the engine runs with every
pass so checked and with none, over the measured corpus, the fixture lines and a generated mix built from
every rule's literal, and the outputs must be identical.
"""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import sys
from pathlib import Path

from nexusmem import redact_engine
from nexusmem.redact import PLACEHOLDER_RE

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = json.loads((FIXTURES / "redaction_corpus.json").read_text(encoding="utf-8"))


def _fixture_texts() -> list[str]:
    texts = [row["context"].replace("{s}", row["value"]) for row in CORPUS["secrets"]]
    texts += CORPUS["ordinary"]
    for name in ("secrets.txt", "not_secrets.txt"):
        for raw in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            texts.append(raw.split("\t")[0])
    return [t for t in texts if t]


def _generated_texts(count: int, seed: int) -> list[str]:
    """Texts made of every rule's literal followed by random token-ish characters (so that most rules find
    their literal and many match), corpus lines, case changes and noise; a few longer than _PREFILTER_MAX."""
    rng = random.Random(seed)
    literals = sorted({rule.literal for rule in redact_engine.PATTERNS if rule.literal})
    fixtures = _fixture_texts()
    alphabet = string.ascii_letters + string.digits + "-_=.:/+~ \t\"'`$@<>{};|&"
    body = string.ascii_letters + string.digits + "-_=./+"

    def piece() -> str:
        roll = rng.random()
        if roll < 0.35:
            return rng.choice(fixtures)
        if roll < 0.85:
            literal = rng.choice(literals)
            if rng.random() < 0.15:
                literal = literal.upper() if rng.random() < 0.5 else literal.title()
            sep = rng.choice(["", "", "=", ": ", " ", "='", '="'])
            chars = body if rng.random() < 0.7 else alphabet
            return literal + sep + "".join(rng.choice(chars) for _ in range(rng.randint(0, 90)))
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))

    texts = []
    for i in range(count):
        joiner = rng.choice([" ", "\n", "", " && ", "\n+", "; "])
        parts = [piece() for _ in range(rng.randint(1, 8))]
        if i % 50 == 0:  # past _PREFILTER_MAX
            parts = parts * (redact_engine._PREFILTER_MAX // max(1, len("".join(parts))) + 2)
        texts.append(joiner.join(parts))
    return texts


def test_the_prefilter_never_skips_a_rule_that_would_have_matched() -> None:
    texts = _fixture_texts() + _generated_texts(4000, seed=20261130)
    redacted = 0
    for text in texts:
        checked = redact_engine._redact_counts(text, True)
        unchecked = redact_engine._redact_counts(text, False)
        assert checked == unchecked, text
        assert redact_engine.redact_counts(text) == unchecked, text
        redacted += bool(PLACEHOLDER_RE.search(unchecked[0]))
    # Not a vacuous comparison: a good share of the texts has something redacted.
    assert redacted > len(texts) // 3, (redacted, len(texts))


def test_every_match_starts_with_its_rules_literal() -> None:
    """What the prefilter relies on, checked on the matches themselves (lowered rules in text.lower())."""
    seen = 0
    for text in _fixture_texts() + _generated_texts(600, seed=7):
        lowered = text.lower()
        if len(lowered) != len(text):
            continue
        for rule in redact_engine.PATTERNS:
            if rule.finder is not None:
                continue
            source = lowered if rule.lowered else text
            for m in rule.pattern.finditer(source):
                assert source.startswith(rule.literal, m.start()), (rule.name, text)
                seen += 1
    assert seen > 1000


def test_a_short_command_compiles_few_of_the_engines_regexes() -> None:
    """In a fresh process, redacting a command with a secret in it compiles the few regexes its text can
    match, not all ~250 (what precheck pays to show a failing command redacted), and of the token pass its
    `sk-` opens only that branch, not the whole pass."""
    code = (
        "from nexusmem import redact_engine as e\n"
        "out = e.redact('pytest tests/test_api.py -k case_1 --api-key=sk-' + '1' * 40)\n"
        "lazies = [r._pattern for r in e.PATTERNS] + list(e._CONTEXT_PASS.values())\n"
        "scans = [*e._TOKEN_SCANS, *(s for _, group in e._CONTEXT_SCANS for s in group)]\n"
        "done = sum(x._compiled is not None for x in [*lazies, *scans])\n"
        "partial = [p.pattern for s in e._TOKEN_SCANS for p in s._partial.values()]\n"
        "print(out, done + len(partial), len(lazies) + len(scans), max(map(len, partial)))\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    out, done, total, longest = shown.rsplit(" ", 3)
    assert out == "pytest tests/test_api.py -k case_1 --api-key=«redacted:openai-key»"
    assert int(total) > 200
    assert int(done) <= 12, shown
    assert int(longest) < 300, shown  # the `s` pass whole is 1,449 characters of regex


def test_a_pass_built_from_the_literals_a_text_holds_finds_what_the_whole_pass_finds() -> None:
    """A short text runs a token pass compiled from only the rules whose literal it holds (pattern_for):
    the same matches at the same places as the whole pass, over every subset the corpus and the generated
    mix hold; the engine's answer through those partial passes is the answer without them."""
    texts = _fixture_texts() + _generated_texts(1500, seed=11)
    compared = partial = 0
    cache: dict[tuple[int, tuple[str, ...]], re.Pattern[str]] = {}
    for text in texts:
        for n, scan in enumerate(redact_engine._TOKEN_SCANS):
            present = tuple(literal for literal in scan.literals if literal in text)
            if not present:
                continue
            key = (n, present)
            if key not in cache:
                cache[key] = re.compile(scan.source(present))
            spans = [m.span() for m in cache[key].finditer(text)]
            assert spans == [m.span() for m in scan.pattern().finditer(text)], (scan.anchor, present, text)
            compared += bool(spans)
            partial += len(present) < len(scan.literals)
    assert compared > 500 and partial > 1000, (compared, partial)


def test_a_fresh_engine_answers_through_partial_passes_as_through_whole_ones() -> None:
    """In a fresh process (nothing compiled yet), short texts go through partial passes (here with no limit
    on how many a pass compiles, so that every text does): the answers are those of the whole passes."""
    texts = [t for t in _fixture_texts() + _generated_texts(300, seed=5) if len(t) <= 4096]
    code = (
        "import json, sys\n"
        "from nexusmem import redact_engine as e\n"
        "e._PARTIAL_MAX = 10**6\n"
        "texts = json.loads(sys.stdin.read())\n"
        "out = [e.redact_counts(t) for t in texts]\n"
        "partial = sum(len(s._partial) for s in e._TOKEN_SCANS)\n"
        "print(json.dumps([out, partial]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    fresh, partial = json.loads(done.stdout)
    assert partial > 100
    for text, (redacted, counts) in zip(texts, fresh, strict=True):
        assert (redacted, counts) == redact_engine._redact_counts(text, False), text
