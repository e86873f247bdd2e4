"""Time in a question: whether it asks about recent events ("what failed yesterday"), and the explicit
--since/--until window.

Recency is a prior that only some questions want. "Why does the parser reject tabs" is answered by a commit
from five years ago as well as by one from last week; "what did I try yesterday" is not. So age counts for
every kind of node only when the question carries a time cue, and otherwise only for the kinds whose worth
fades by nature (shell commands, conversation turns).

The day words ("today", "yesterday", --since today) are days of the local time zone, the asker's; a date
written out is a UTC day, as every time NexusMem stores and prints is UTC.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from nexusmem.errors import UsageError

# How far back a question with a time cue also looks for its words (the window before the newest event, or the
# date it names), and a failure told in the past with no time said (retrieve.query, retrieve.runs).
CUE_WINDOW_MS = 30 * 86_400_000

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# How sure the asker is of an age, between its unit and "ago": "a week or so ago", "a day or two ago" (here
# and in the window a failure report's time gives, retrieve.query).
LOOSELY = r"(?:\s+or\s+(?:so|two|three))?"
# And a half of a unit, before it or after it: "two and a half hours ago", "an hour and a half ago".
HALF = r"(?:\s+and\s+a\s+half)?"
# Counts written out past ten, as people give minutes and days: "forty minutes ago", "fifteen days ago".
TENS = r"eleven|twelve|fifteen|twenty|thirty|forty|forty[- ]five|fifty|sixty|ninety"
# Phrases that ask about time relative to now. "last" alone is left out: "the last argument" is not a time.
_RELATIVE_SOURCE = (
    r"\b(?:"
    r"recent|recently|lately|latest|newest|most\s+recent|just\s+now|right\s+now|earlier\s+today"
    r"|today|tonight|yesterday|this\s+(?:morning|afternoon|evening|week|month|sprint)"
    r"|last\s+(?:night|week|month|year|time|thing|attempt|try|run|change|commit|push|few\s+\w+|couple\s+of\s+\w+)"
    r"|(?:try|tried|did|ran|run|changed|broke|failed|fixed|touched)\s+last(?:\s+time)?"
    rf"|(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|{TENS}|few|a\s+few|couple\s+of|several)"
    rf"{HALF}\s+(?:minutes?|hours?|days?|weeks?|months?){HALF}{LOOSELY}\s+(?:ago|back)"
    r"|(?:past|last)\s+(?:\d+\s+|few\s+|couple\s+of\s+)?(?:hour|hours|days|weeks|months)"
    r")\b"
)
# Every phrase above contains one of these whole words.
_RELATIVE_WORDS = frozenset(
    {"recent", "recently", "lately", "latest", "newest", "now", "today", "tonight", "yesterday", "this",
     "last", "ago", "past"}
)  # fmt: skip
# An explicit date: 2024-05-01, 2024/05/01, "May 3", "3 May", "March 2024". Each form has a digit.
_DATE_SOURCE = (
    r"\b(?:\d{4}[-/]\d{1,2}[-/]\d{1,2}"
    rf"|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\b"
    rf"|(?:{_MONTHS})\.?\s+\d{{4}})"
)
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The relative-phrase and date regexes, compiled on the first question that may hold either (their
    case-insensitive alternations cost ~5 ms to compile, a fortieth of a cold `nexusmem query`)."""
    return re.compile(_RELATIVE_SOURCE, re.IGNORECASE), re.compile(_DATE_SOURCE, re.IGNORECASE)


def _may_have_cue(text: str) -> bool:
    """False only when TEXT cannot match either regex: ASCII (so that case folding is plain lower()),
    without a digit and without any of the relative phrases' words as a whole word."""
    if not text.isascii():
        return True
    lowered = text.lower()
    if any(c.isdigit() for c in lowered):
        return True
    words = "".join(c if c in _WORD_CHARS else " " for c in lowered).split()
    return not _RELATIVE_WORDS.isdisjoint(words)


_ISO_DAY = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")


@dataclass(frozen=True)
class Cue:
    """A time cue found in a question: the phrases that carry it, and (for a question naming one ISO
    date, "what broke on 2024-05-01") that day, which age is then measured from instead of from now."""

    phrases: tuple[str, ...]
    anchor_ms: int | None = None


def find_cue(text: str) -> Cue | None:
    """The question's time cue ("recently", "yesterday", "last week", "just now", a date...), or None."""
    if not _may_have_cue(text):
        return None
    relative, dates = _patterns()
    found = [m.group(0) for m in relative.finditer(text)] + [m.group(0) for m in dates.finditer(text)]
    if not found:
        return None
    days = {m.groups() for m in _ISO_DAY.finditer(text)}
    anchor = None
    if len(days) == 1 and not relative.search(text):
        year, month, day = (int(x) for x in next(iter(days)))
        try:
            anchor = int(datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp() * 1000)
        except ValueError:
            anchor = None
    return Cue(tuple(found), anchor)


# The thing a "last …" phrase names is what the question is about, not when: "before my last commit" still
# asks about a commit (taking the phrase out whole left "before my", and no match at all).
_EVENT_NOUNS = frozenset(["attempt", "try", "run", "change", "commit", "push"])


def _time_words_out(found: re.Match[str]) -> str:
    words = found.group(0).split()
    kept = words[1:] if words[0].lower() == "last" and words[-1].lower() in _EVENT_NOUNS else []
    return " " + " ".join(kept) + " "


def without_cue(text: str, cue: Cue | None) -> str:
    """TEXT with the cue's relative phrases taken out ("what failed yesterday" → "what failed"), when
    something is left; dates stay (a date's words can be in a commit message or a release note)."""
    if cue is None:
        return text
    stripped = _patterns()[0].sub(_time_words_out, text)
    stripped = re.sub(r"\s+", " ", stripped).strip()
    return stripped if re.search(r"\w", stripped) else text


# --- dates written in a question: "since 2024-07-01", "in July 2024", "between A and B" ------------------------
_MONTH_NUMBER = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}  # fmt: skip
_DAY_WORDS = r"(?:\d{4}[-/]\d{1,2}[-/]\d{1,2}" rf"|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
_DAY_WORDS += (
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\.?,?\s+\d{{4}}|(?:{_MONTHS})\.?,?\s+\d{{4}}|\d{{4}})"
)
_DATED = re.compile(
    rf"\b(?:between\s+(?P<a>{_DAY_WORDS})\s+and\s+(?P<b>{_DAY_WORDS})"
    rf"|from\s+(?P<c>{_DAY_WORDS})\s+(?:to|until|till|through)\s+(?P<d>{_DAY_WORDS})"
    rf"|(?P<verb>since|after|from|before|until|till|up\s+to|in|during|on)\s+(?P<e>{_DAY_WORDS}))(?![\w/-]|\.\w)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Dated:
    """The window a question's written dates name (dated_window): LOW..HIGH in epoch ms, both included,
    and the PHRASE that names it, as written."""

    low: int
    high: int
    phrase: str


def _day_span(text: str) -> tuple[int, int] | None:
    """(first, last ms) of the UTC day, month or year TEXT writes ("2024-07-01", "July 1, 2024", "July 2024",
    "2024"); None for no date (2024-02-30)."""
    words = re.findall(r"[a-z]+|\d+", text.lower())
    try:
        if len(words) == 1:  # a year
            first, after = date(int(words[0]), 1, 1), date(int(words[0]) + 1, 1, 1)
        elif words[0].isdigit() and len(words[0]) == 4:  # ISO
            first = date(int(words[0]), int(words[1]), int(words[2]))
            after = first + timedelta(days=1)
        elif len(words) == 2:  # a month
            month, year = _MONTH_NUMBER[words[0]], int(words[1])
            first = date(year, month, 1)
            after = date(year + month // 12, month % 12 + 1, 1)
        else:
            day, month = (words[1], words[0]) if not words[0].isdigit() else (words[0], words[1])
            first = date(int(words[-1]), _MONTH_NUMBER[month], int(re.sub(r"\D", "", day)))
            after = first + timedelta(days=1)
    except (ValueError, KeyError, IndexError, OverflowError):
        return None
    start = int(datetime(first.year, first.month, first.day, tzinfo=timezone.utc).timestamp() * 1000)
    end = int(datetime(after.year, after.month, after.day, tzinfo=timezone.utc).timestamp() * 1000) - 1
    return start, end


def dated_window(text: str) -> Dated | None:
    """The window the dates TEXT writes name, as --since/--until would ("since 2024-07-01": from that day
    on; "after": from the next; "before": up to the day before; "until": to its end; "in July 2024", "in
    2024", "on 2024-07-14": that month, year or day; "between A and B", "from A to B": both included); a date
    is a UTC day. None when it writes none (a bare year needs "since", "in"…; "in 2024" of a ticket is rare
    in a question about a file, and the only asker of this)."""
    found = _DATED.search(text)
    if found is None:
        return None
    if found.group("verb") is None:
        first = _day_span(found.group("a") or found.group("c"))
        last = _day_span(found.group("b") or found.group("d"))
        if first is None or last is None or last[1] < first[0]:
            return None
        return Dated(first[0], last[1], found.group(0))
    span = _day_span(found.group("e"))
    if span is None:
        return None
    verb = found.group("verb").lower()
    if verb in ("since", "from"):
        return Dated(span[0], 2**62, found.group(0))
    if verb == "after":
        return Dated(span[1] + 1, 2**62, found.group(0))
    if verb == "before":
        return Dated(0, span[0] - 1, found.group(0))
    if verb in ("until", "till") or verb.startswith("up"):
        return Dated(0, span[1], found.group(0))
    return Dated(span[0], span[1], found.group(0))


# The words a year written as a window may be followed by ("in 2019, which", "during 2018 so that"): another
# word after it makes the year a name's part ("in 2019 edition format", "in 2022 mode").
_AFTER_A_YEAR = frozenset(
    {"a", "an", "and", "as", "at", "because", "but", "by", "for", "from", "in", "is", "it", "on", "or",
     "so", "than", "that", "the", "then", "to", "was", "were", "what", "when", "where", "which", "while",
     "who", "why", "with"}
)  # fmt: skip
# "Commits from last October": the latest month of that name before this one (full names; "last may" is a verb).
_LAST_MONTH = re.compile(
    r"\b[Ll](?i:ast)\s+((?i:january|february|march|april|june|july|august|september|october|november|december)"
    r"|May)\b"
)


def asked_dates(text: str, *, now: datetime | None = None) -> Dated | None:
    """The window of time a question about changes asks with the dates it writes (dated_window), when it is
    more than one day: a month ("in March 2021"), a year ("during 2018", not "in 2019 edition"), a range
    ("between 2019-05-01 and 2019-06-30"), an open end ("since 2019-05-01"), or "last October" (the latest
    October before this month, of NOW's UTC calendar, the wall clock by default). A single day ("on
    2017-10-15", as often the question's data) is left to the cue's date (find_cue). None otherwise: "the
    2019 edition", "Python 3.9", "since 2.0" write no date."""
    dated = dated_window(text)
    if dated is not None:
        bounded = dated.low > 0 and dated.high < 2**62
        if dated.high < dated.low or (bounded and dated.high - dated.low < 86_400_000):
            return None  # "before 1970": no time at all
        tail = text[text.find(dated.phrase) + len(dated.phrase) :]
        after = re.match(r"\s*([A-Za-z]+)", tail)
        year_only = re.search(r"\d{4}\s*$", dated.phrase) and not re.search(
            rf"(?:{_MONTHS}|[-/]\d)", dated.phrase, re.I
        )
        if year_only and after is not None and after.group(1).lower() not in _AFTER_A_YEAR:
            return None
        return dated
    last = _LAST_MONTH.search(text)
    if last is None:
        return None
    month = _MONTH_NUMBER[last.group(1).lower()]
    today = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).date()
    year = today.year if month < today.month else today.year - 1
    span = _day_span(f"{last.group(1)} {year}")
    return None if span is None else Dated(span[0], span[1], f"in {last.group(1).capitalize()} {year}")


# --- --since / --until ---------------------------------------------------------------------------------------
# An age: 30m, 6h, 2d, 1w, also written out ("2 days ago", "3 hours", "last 2 weeks", "90 mins ago").
_AGO = re.compile(
    r"^\s*(?:(?:the\s+)?(?:last|past)\s+)?(\d+)\s*"
    r"(m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)(?:\s+ago)?\s*$",
    re.IGNORECASE,
)
_AGO_UNIT_S = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}


def _local_midnight(day: date) -> int:
    """Epoch ms of the first moment of DAY on this process's wall clock: a naive datetime is local time, the
    offset the one in force at that moment (a midnight a clock change skips is the moment after the jump)."""
    return int(datetime(day.year, day.month, day.day).timestamp() * 1000)


def local_day(days_back: int = 0, *, now: datetime | None = None) -> tuple[int, int]:
    """The first and last epoch ms of the calendar day DAYS_BACK days before NOW's (0: today; NOW is the wall
    clock by default), in this process's local time zone: what TZ says, else the system's. The day of the
    person asking, not a UTC day ("today" at 5 pm in California began 17 hours ago, not one); 23 or 25 hours
    long on a day the clocks change."""
    today = (now or datetime.now(timezone.utc)).astimezone().date()
    day = today - timedelta(days=days_back)
    return _local_midnight(day), _local_midnight(day + timedelta(days=1)) - 1


def parse_when(value: str, *, end: bool = False, now: datetime | None = None) -> int:
    """A --since/--until value → epoch ms. ISO 8601 date or time (a written date is a UTC day, a naive time
    is UTC; 'Z' accepted), "today"/"yesterday" (local days: local_day), or an age such as 30m, 6h, 2d, 1w,
    also written out ("2 days ago", "3 hours", "last 2 weeks") (before NOW, the wall clock by default).

    END: a bare date (or today/yesterday) means the end of that day, so `--until 2024-05-01` includes
    the whole day; otherwise the start of it."""
    text = value.strip()
    clock = now or datetime.now(timezone.utc)
    if not text:
        raise UsageError(
            "an empty time: use YYYY-MM-DD, an ISO 8601 time, today, yesterday or an age like 2d"
        )
    ago = _AGO.match(text)
    if ago:
        seconds = int(ago.group(1)) * _AGO_UNIT_S[ago.group(2)[0].lower()]
        try:
            return int((clock - timedelta(seconds=seconds)).timestamp() * 1000)
        except (OverflowError, ValueError):
            raise UsageError(
                f"{value!r} reaches back before the year 1: give a shorter age or a date"
            ) from None
    if text.lower() in ("today", "yesterday"):
        first, last = local_day(1 if text.lower() == "yesterday" else 0, now=clock)
        return last if end else first
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{8}", text):  # ISO 8601's basic form (20240501) too
        try:
            day = date.fromisoformat(f"{text[:4]}-{text[4:6]}-{text[6:]}" if len(text) == 8 else text)
        except ValueError:
            raise UsageError(f"{value!r} is not a date: use YYYY-MM-DD") from None
        start = int(datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp() * 1000)
        # Counted in ms, not as a datetime: the end of 9999-12-31 is past the last datetime.
        return start + 86_400_000 - 1 if end else start
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise UsageError(
            f"{value!r} is not a time: use YYYY-MM-DD, an ISO 8601 time such as 2024-05-01T12:00:00Z,"
            " today, yesterday, or an age such as 30m, 6h, 2d, 1w or '2 days ago'"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def window(since: str | None, until: str | None) -> tuple[int | None, int | None]:
    """(since ms, until ms) from the option values (None when not given); an empty value (`--since "$X"` with
    X unset) is an error, not the whole history, and so is a window that ends before it starts."""
    lo = parse_when(since) if since is not None else None
    hi = parse_when(until, end=True) if until is not None else None
    if lo is not None and hi is not None and hi < lo:
        raise UsageError(f"the window is empty: until {until} is before since {since}")
    return lo, hi
