"""Chinese/Japanese/Korean recall: the query's CJK runs, looked up in the trigram index beside BM25."""

from __future__ import annotations

import re

from nexusmem.store.interface import SearchStore

_CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+")
MAX_TRIGRAMS = 32


def runs(text: str) -> list[str]:
    """The maximal runs of CJK characters in TEXT, in order, without duplicates."""
    return list(dict.fromkeys(_CJK_RUN.findall(text)))


def trigrams(text: str) -> tuple[list[str], list[str]]:
    """(every 3-character window of the query's CJK runs, runs shorter than 3 characters).

    An OR of overlapping trigrams lets BM25 prefer nodes that share more of a long query (修复缓存锁
    finds 缓存锁文件 through 缓存锁) while any single shared trigram still recalls.
    """
    grams: list[str] = []
    short: list[str] = []
    for run in runs(text):
        if len(run) < 3:
            short.append(run)
            continue
        grams.extend(run[i : i + 3] for i in range(len(run) - 2))
    return list(dict.fromkeys(grams))[:MAX_TRIGRAMS], short


def search(store: SearchStore, text: str, *, limit: int, as_of: int | None = None) -> list[str]:
    """Node ids from the CJK trigram index for TEXT, best first; [] when TEXT has no CJK characters."""
    grams, short = trigrams(text)
    if not grams and not short:
        return []
    return store.search_cjk(grams, short, limit, as_of)


def search_scored(
    store: SearchStore, text: str, *, limit: int, as_of: int | None = None
) -> list[tuple[str, float]]:
    """(id, score) from the CJK trigram index for TEXT, best first; [] when TEXT has no CJK characters."""
    grams, short = trigrams(text)
    if not grams and not short:
        return []
    return store.search_cjk_scored(grams, short, limit, as_of)
