"""Regular expressions compiled when first used, not when their module is imported.

A cold `nexusmem query` imports the question's readers (retrieve.intent, retrieve.query), which hold about a
hundred patterns for the kinds of question there are; one question uses a third of them. Compiled at import,
the others cost every cold query ~14 ms (167 → 153 ms p50: README, "Measured figures"). The redaction engine's
~230 patterns took 45-85 ms of every process that redacted anything, where a text can match only a few of
them (redact_engine). Imports nothing but `re`, `sys` and `collections.abc`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

# The methods of the compiled pattern that take the place of this class's own once it is compiled.
_BOUND = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class Pattern:
    """re.compile(PATTERN, FLAGS) on the first call of one of its methods. From then on the compiled
    pattern's own bound methods answer (set on the instance, they come before the class's): a pattern in a
    loop costs what a compiled one does."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern  # the source, as re.Pattern.pattern: other patterns are built from it
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern, compiled now if it was not yet."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
            self.__dict__.update((name, getattr(compiled, name)) for name in _BOUND)
        return compiled

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def subn(
        self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0
    ) -> tuple[str, int]:
        return self.compiled().subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled().split(string, maxsplit)


def compile(pattern: str, flags: int = 0) -> Pattern:
    """A Pattern of PATTERN and FLAGS, compiled on first use."""
    return Pattern(pattern, flags)
