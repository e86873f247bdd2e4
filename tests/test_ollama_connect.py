"""How long an Ollama embedder that cannot answer costs before it is said and remembered: connecting is
bounded by ollama.CONNECT_TIMEOUT (loopback and LAN hosts connect in milliseconds), answering by the
call's whole timeout (a model loading before its first answer takes a while). Real loopback servers: the
stand-in speaking Ollama's HTTP API, one that accepts and never answers, and a listening socket whose full
backlog never lets a connection in."""

from __future__ import annotations

import time

import pytest

from nexusmem import ollama
from nexusmem.embed import EmbeddingUnavailable
from nexusmem.embed.ollama import SYNC_TIMEOUT, OllamaProvider
from nexusmem.ollama import CONNECT_TIMEOUT, OllamaClient, OllamaTimedOut

from helpers.ollama_standin import hangs_connecting, never_accepting, ollama_standin


def timed_embed(provider: OllamaProvider) -> tuple[float, str]:
    start = time.monotonic()
    with pytest.raises(EmbeddingUnavailable) as caught:
        provider.embed(["cache lock file expired"])
    return time.monotonic() - start, str(caught.value)


@pytest.mark.parametrize("direct", [True, False], ids=["stdlib-connect", "httpx-connect"])
def test_a_server_that_accepts_no_connection_fails_on_the_connect_timeout(
    direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync (SYNC_TIMEOUT, 120 s) against a port whose listener never accepts: it fails after
    CONNECT_TIMEOUT, not the whole call's timeout, and is remembered like a server that does not answer. It
    said "did not answer within 120s (ConnectTimeout)" after 2 s: the time it names is now the one it
    waited, and what did not happen (no connection accepted). Both ways of connecting: the stdlib check
    before httpx is loaded, and httpx's own connect (a later request, or a proxy set)."""
    if not direct:
        monkeypatch.setattr(ollama, "reachable", lambda url, timeout: None)
    with never_accepting() as url:
        if not hangs_connecting(url):
            pytest.skip("this system refuses a connection to a full backlog instead of leaving it pending")
        provider = OllamaProvider("nomic-embed-text", url, SYNC_TIMEOUT)
        took, said = timed_embed(provider)
        assert CONNECT_TIMEOUT - 0.1 <= took < CONNECT_TIMEOUT + 1.5, took
        assert (
            said == f"Ollama at {url} did not answer: it accepted no connection within {CONNECT_TIMEOUT:g}s"
        )
        down = ollama.recently_down(url)
        assert down is not None and down.why == said
        took, said = timed_embed(provider)  # remembered: not waited for again
        assert took < 0.5 and "not asked again for" in said, said
        provider.close()


def test_a_server_that_accepts_and_never_answers_costs_the_whole_timeout_then_is_remembered() -> None:
    """Accepting and never answering is not told apart from a model loading: the whole timeout (a query's
    5 s, 1.5 s here), not the connect timeout, then remembered."""
    with ollama_standin() as server:
        server.mode = "hang"
        provider = OllamaProvider("nomic-embed-text", server.url, 1.5)
        took, said = timed_embed(provider)
        assert 1.4 <= took < 3.0, took
        assert said == f"Ollama at {server.url} did not answer within 1.5s", said
        assert ollama.recently_down(server.url) is not None and len(server.requests) == 1
        provider.close()


def test_a_slow_first_answer_is_read_past_the_connect_timeout() -> None:
    """A model loading cold answers its first request late: past the connect timeout it is still read (the
    read timeout is the whole call's), and nothing is remembered."""
    with ollama_standin() as server:
        server.mode, server.delay = "slow", 1.0
        client = OllamaClient(server.url, timeout=10.0, connect_timeout=0.3)
        start = time.monotonic()
        answer = client.post("/api/embed", {"model": "nomic-embed-text", "input": ["cache"]})
        assert answer.status_code == 200 and time.monotonic() - start >= 1.0
        client.close()
        provider = OllamaProvider("nomic-embed-text", server.url, SYNC_TIMEOUT)
        server.delay = CONNECT_TIMEOUT + 0.5
        (vector,) = provider.embed(["cache lock file expired"])
        assert len(vector) == server.dim and ollama.recently_down(server.url) is None
        provider.close()


def test_a_connect_timeout_never_exceeds_the_call_timeout() -> None:
    """A call allowed less than CONNECT_TIMEOUT in all is not held longer by connecting."""
    with never_accepting() as url:
        if not hangs_connecting(url):
            pytest.skip("this system refuses a connection to a full backlog instead of leaving it pending")
        client = OllamaClient(url, timeout=0.5)
        start = time.monotonic()
        with pytest.raises(OllamaTimedOut, match=r"accepted no connection within 0\.5s"):
            client.post("/api/embed", {"model": "nomic-embed-text", "input": ["cache"]})
        assert time.monotonic() - start < 1.5
        client.close()
