"""The one HTTP client for a local Ollama server: embeddings (embed/ollama.py), the contradiction judge
(hygiene/stale.py) and session summaries (sources/session.py) all post JSON through it.

httpx is imported on first use, not with this module: importing it costs ~0.5 s, and most runs (a sync with
the builtin embedder, every precheck) never talk to Ollama. A refused connection answers at once; a host
that drops packets must not hang a sync, hence the short connect timeout.
"""

from __future__ import annotations

from typing import Any

CONNECT_TIMEOUT = 2.0


def listening(url: str, timeout: float = 0.25) -> bool:
    """Whether anything accepts a TCP connection at URL's host and port (stdlib only, no HTTP).

    Most machines run no model server: one socket finds that out before httpx is imported (~0.5 s).
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


class OllamaUnreachable(Exception):
    """No HTTP answer at all: refused, unresolvable, or too slow. The message is one sentence."""


class OllamaClient:
    """POST JSON to one Ollama server; one connection pool per client, closed by close()."""

    def __init__(self, url: str, *, timeout: float, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self._client: Any = None

    def post(self, endpoint: str, payload: dict[str, Any]) -> Any:
        """The httpx response to POST {url}{endpoint} with PAYLOAD as JSON, whatever its status."""
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout))
        try:
            return self._client.post(f"{self.url}{endpoint}", json=payload)
        except httpx.TimeoutException as exc:
            raise OllamaUnreachable(
                f"Ollama at {self.url} did not answer within {self.timeout:g}s ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise OllamaUnreachable(f"Ollama at {self.url} is unreachable ({type(exc).__name__})") from exc

    def http_error(self, response: Any, model: str) -> str:
        """One sentence for a non-200 answer: the status and the start of what the server said."""
        detail = response.text.strip().replace("\n", " ")[:160]
        return f"Ollama at {self.url} answered HTTP {response.status_code} for model {model!r}: {detail}"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
