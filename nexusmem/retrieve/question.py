"""A question as it is searched (Question, prepare): cut when overlong, its time cue found and taken out of
the words, and what it asks read once (retrieve.intent) for the rules of retrieve.query to use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nexusmem.retrieve import search, timecue
from nexusmem.retrieve.intent import (
    ConversationAsk,
    Intent,
    Sequence,
    Topic,
    adopted_name,
    conversation_asked,
    first_release_asked,
    intent,
    mentions_docs,
    mentions_tests,
    migration,
    names_code,
    newest_release_asked,
    origin_name,
    own_change_verb,
    pasted_trace,
    platforms_named,
    purpose_name,
    release_named,
    release_span,
    release_version,
    removed_name,
    reports_failure,
    reports_run_failure,
    sequence,
    still_asked,
    topic,
)
from nexusmem.store.releases import version_key
from nexusmem.text import without_edge_punctuation

# A question longer than this is cut (its first and last halves kept), with a note: ~4 pages of a pasted log.
MAX_QUERY_CHARS = 8000


@dataclass
class Question:
    """A question as it is searched: cut when overlong, its time cue found and taken out of the words."""

    text: str  # what was asked (after the cut)
    search_text: str  # without the time cue's phrases: what BM25 and the embedder see
    cue: timecue.Cue | None
    notes: list[str] = field(default_factory=list)
    asks: Intent = "neutral"  # how to use something, or what happened (retrieve.intent)
    origin: str | None = None  # the code name whose first change is asked for (intent.origin_name)
    then: Sequence | None = None  # asks what was run after (or before) what it names (intent.sequence)
    names_code: bool = False  # names an identifier, a file or an option (intent.names_code)
    gone: str | None = None  # the code name whose removal is asked for (intent.removed_name)
    release: str | None = None  # the project's release the question names (intent.release_version)
    about_docs: bool = False  # speaks of documentation (intent.mentions_docs): doc-only changes count fully
    about_tests: bool = False  # speaks of tests (intent.mentions_tests): test-only changes count fully
    failure: bool = False  # reports a failure (intent.reports_failure): a change to many files counts less
    topic: Topic | None = None  # the practical matter asked about (intent.topic): its doc sections count more
    shipped: str | None = None  # the release whose contents the question asks for (intent.release_named)
    cut: bool = False  # TEXT is an overlong question's first and last halves (MAX_QUERY_CHARS)
    newest: bool = False  # asks what the newest release holds (intent.newest_release_asked)
    first: bool = False  # asks what the first release holds (intent.first_release_asked)
    # The releases (from, to) a question about migrating from one to the other names (intent.migration).
    migrates: tuple[str | None, str | None] | None = None
    # A pasted trace's frames (intent.pasted_trace): searched as context of its headline, which is TEXT.
    frames: str = ""
    # The release asked about is tagged on a commit HEAD does not reach, and memory holds nothing it says of
    # it (no changelog entry under its heading): the answer is weak.
    unreached: bool = False
    # The code name whose origin or purpose the question asks (ORIGIN) when no node holds it whole
    # (search.held_whole): it takes for granted a name memory never saw, and the answer is weak.
    unheld: str | None = None
    # ORIGIN is the name whose purpose the question asks ("what is COVERAGE_PROCESS_START for?",
    # intent.purpose_name), not where it began.
    purpose: bool = False
    # The note saying the vectors were not searched although the config names an embedder, and why
    # (semantic_note of vector.Neighbours.skipped, and of the stored vectors being another embedder's):
    # said as the answer's last note.
    semantic_skipped: str | None = None
    # The releases (earlier, later or None for the next one) a question about what changed between them names
    # (intent.release_span): the later one's contents are answered, its commits counted from the earlier.
    span: tuple[str, str | None] | None = None
    # GONE is asked whether the code still holds it, yes or no (intent.still_asked).
    still: bool = False
    # Asks what was said to an agent about something ("what did I ask claude about X":
    # intent.conversation_asked): the conversation turns its words match come first (conversations_first).
    conversation: ConversationAsk | None = None
    # The operating systems the question names (intent.platforms_named): a change about one of them counts
    # more in the learned last step (rerank.FEATURES "platform").
    platforms: frozenset[str] = frozenset()
    # Reports a failure or a run that did not finish (intent.reports_run_failure: "ran out of", "got killed"):
    # what the failed-run listings and the anchor of "what did I do next" read.
    run_failure: bool = False


def prepare(text: str, project: str | None = None) -> Question:
    """Cut an overlong question (keeping its start and its end: a pasted log's error is often last),
    and find its time cue (PROJECT: the project's name, which may name its releases: "Guzzle 7.4.1")."""
    notes: list[str] = []
    cut = len(text) > MAX_QUERY_CHARS
    if cut:
        half = MAX_QUERY_CHARS // 2
        notes.append(f"the question was cut to its first and last {half:,} of {len(text):,} characters")
        text = text[:half] + " … " + text[-half:]
    trace = pasted_trace(text)
    if trace is not None:
        # A pasted stack trace asks about its headline (the exception and its message); its frames, dozens of
        # paths and function names, outweighed it ("searched the 24 rarest known words", and guzzle's "Adding
        # a ConnectException" 49th for a ConnectException's trace). The headline is the question, and a
        # pasted log is no question about time.
        question = prepare(trace.headline, project)
        question.notes[:0] = [
            *notes,
            f"a pasted trace: its headline is the question, its {trace.frames.count(chr(10)) + 1} frames"
            " context",
        ]
        question.cue, question.cut, question.frames = None, cut, trace.frames
        question.search_text = trace.headline
        return question
    # A pasted log or document is not a question about time, whatever timestamps it holds.
    short = len(search.terms(text)) <= search.MAX_QUERY_TERMS
    cue = timecue.find_cue(text) if short else None
    if not short:
        return Question(text, timecue.without_cue(text, cue), cue, notes, cut=cut)
    origin = origin_name(text)
    question = Question(
        text,
        timecue.without_cue(text, cue),
        cue,
        notes,
        intent(text),
        origin or purpose_name(text) or adopted_name(text),
        sequence(text),
        names_code(text),
        removed_name(text),
        release_version(text),
        mentions_docs(text),
        mentions_tests(text),
        reports_failure(text),
        topic(text),
        release_named(text, project),
        cut,
        newest_release_asked(text),
    )
    question.migrates = migration(text)
    question.run_failure = reports_run_failure(text)
    question.platforms = platforms_named(text)
    question.conversation = conversation_asked(text)
    if question.conversation is not None:
        # "what did I ask claude about": who was asked and how, not what about (the agent's name matched
        # every command it ran).
        left = question.search_text.replace(question.conversation.phrase, " ")
        question.search_text = " ".join(left.split()) if re.search(r"\w", left) else question.search_text
    verb = own_change_verb(text)
    if verb is not None:
        # "why did I change the easter function": about easter; every commit that says "change" matched it.
        left = re.sub(rf"\b{re.escape(verb)}\b", " ", question.search_text, count=1)
        question.search_text = " ".join(left.split()) if search.terms(left) else question.search_text
    if question.gone is None and question.origin is None:
        question.gone = still_asked(text)
        question.still = question.gone is not None
    question.purpose = (
        origin is None and question.origin is not None and question.origin == purpose_name(text)
    )
    question.first = first_release_asked(text)
    question.span = release_span(text, project) if question.migrates is None else None
    if question.migrates is not None:
        # "Upgrading from 5.0 to 6.0": what the guide says to change, not the changes made after 6.0's tag.
        question.release = question.shipped = None
    elif question.span is not None and question.span[1] is not None:
        # "What changed between 7.5.0 and 7.5.1?": what 7.5.1 holds, its commits counted from 7.5.0; the
        # newer named first ("between 0.13.0 and 0.12.0") is the same range, read in version order.
        low, high = sorted(question.span, key=lambda version: version_key(version or ""))
        question.span = (low or "", high)
        question.shipped, question.release = high, None
    elif question.shipped is not None:
        # "What changed in guzzle 7.4.1": what the release holds, not the changes made after its tag (and no
        # note saying those come first).
        question.release = None
    return question


# A question of this many words or fewer is embedded without the punctuation around its words (see terse_text).
TERSE_WORDS = 3


def terse_text(text: str) -> str:
    """TEXT as the embedder is to read it: a question of TERSE_WORDS words or fewer without the punctuation
    around them. In "(retry" or "retry?" a mark is a token of the few the embedder pools, and the answer's
    order and its weak flag turned on it (`retry` weak, `retry?` strong). In a sentence a mark is one token
    among many, and stripping them everywhere cost fresh65 hybrid MRR .683 -> .678 (doc .867 -> .831)."""
    return without_edge_punctuation(text) if len(text.split()) <= TERSE_WORDS else text
