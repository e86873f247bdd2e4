"""The one HTTP client for a local Ollama server: embeddings (embed/ollama.py), the contradiction judge
(hygiene/stale.py) and session summaries (sources/session.py) all post JSON through it.

httpx is imported on first use, not with this module: importing it costs ~0.5 s, and most runs (a sync with
the builtin embedder, every precheck) never talk to Ollama. Before it is, one stdlib connect finds out
whether anything listens (reachable): a refused connection then costs a query or a sync no import at all,
and nothing needs remembering (a server just started is used at once). A host that drops packets must not
hang a sync, hence the short connect timeout. `timeout` bounds the whole call (the answer read to its end),
not the gap between two bytes: a server that dribbles its answer is cut off there.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# How long connecting may take (the call's timeout when that is shorter); reading the answer may take the
# whole call's timeout. Loopback and LAN hosts connect in milliseconds: a server that accepts no connection
# (a full backlog, a host dropping packets) fails on this, not on the 120 s a sync allows a model loading
# cold to send its first answer. 2 s leaves room for one lost SYN (retransmitted after 1 s).
CONNECT_TIMEOUT = 2.0
# The largest answer read: a chat verdict or summary is a few hundred bytes, a batch of 256 embeddings of
# 1,024 dimensions ~6 MB as JSON. A server that sends more is not an Ollama answering these requests.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


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


class OllamaTimedOut(OllamaUnreachable):
    """No whole answer within the time allowed (connecting included): a server that accepts and never
    answers, a host that drops packets. What the embedder remembers (remember_down)."""


def reachable(url: str, timeout: float) -> None:
    """Nothing when something accepts a TCP connection at URL's host and port within TIMEOUT seconds (closed
    at once); OllamaUnreachable saying why when nothing does (refused: nothing listens there), OllamaTimedOut
    when the connection is not accepted in time. Stdlib only: a refusal costs no httpx import (every query of
    an agent would pay it). Skipped when a proxy is set in the environment: httpx goes through it, not direct."""
    import socket
    from urllib.parse import urlsplit

    if any(key.lower().endswith("_proxy") and key.lower() != "no_proxy" for key in os.environ):
        return
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return
    except TimeoutError as exc:
        raise OllamaTimedOut(
            f"Ollama at {url} did not answer: it accepted no connection within {timeout:g}s"
        ) from exc
    except ConnectionRefusedError as exc:
        raise OllamaUnreachable(
            f"Ollama at {url} is unreachable: it refused the connection, nothing listens there"
        ) from exc
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise OllamaUnreachable(f"Ollama at {url} is unreachable ({reason})") from exc


class OllamaHTTPError(Exception):
    """The server answered, but not with 200 (an unknown model, an overloaded server). One sentence."""


class OllamaBadAnswer(Exception):
    """A 200 answer that is not the JSON shape of a chat or generate reply."""


def answer_json(content: Any) -> Any:
    """The JSON value a model answered with (a code fence or prose around the object is tolerated);
    OllamaBadAnswer saying what is wrong with it otherwise."""
    if not isinstance(content, str):
        raise OllamaBadAnswer("the model's answer is not text")
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        raise OllamaBadAnswer("the model's answer holds no JSON object")
    try:
        return json.loads(content[start : end + 1])
    except ValueError as exc:
        raise OllamaBadAnswer("the model's answer is not valid JSON") from exc


@dataclass(frozen=True)
class Answer:
    """A whole HTTP answer: its status and body (read within the client's time limit)."""

    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class OllamaClient:
    """POST JSON to one Ollama server; one connection pool per client, closed by close()."""

    def __init__(self, url: str, *, timeout: float, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self._client: Any = None

    def post(self, endpoint: str, payload: dict[str, Any]) -> Answer:
        """The answer to POST {url}{endpoint} with PAYLOAD as JSON, whatever its status, read whole within
        self.timeout seconds of the start (OllamaUnreachable past it) and at most MAX_ANSWER_BYTES long
        (OllamaBadAnswer beyond)."""
        deadline = time.monotonic() + self.timeout
        if self._client is None:
            reachable(self.url, self.connect_timeout)  # before httpx is imported: a refusal costs no import
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout))
        client = self._client
        # The call runs on a worker thread the caller waits for until the deadline, and no longer: a read
        # timeout bounds each read, not the answer (a server sending a byte now and then held a call for
        # minutes), and httpx reads it once per answer. A call past its deadline is left to its own read
        # timeout on that thread, with its client, which is not used again.
        done: dict[str, Any] = {}

        def call() -> None:
            try:
                done["answer"] = self._read(client, endpoint, payload, deadline)
            except BaseException as exc:  # handed to the caller
                done["error"] = exc

        worker = threading.Thread(target=call, name="nexusmem-ollama", daemon=True)
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()) + 0.05)
        if worker.is_alive():
            self._client = None
            raise OllamaTimedOut(f"Ollama at {self.url} did not answer within {self.timeout:g}s")
        if "error" in done:
            raise done["error"]
        answer: Answer = done["answer"]
        return answer

    def _read(self, client: Any, endpoint: str, payload: dict[str, Any], deadline: float) -> Answer:
        """POST PAYLOAD to ENDPOINT with CLIENT and read the answer whole (see post)."""
        import httpx

        try:
            with client.stream("POST", f"{self.url}{endpoint}", json=payload) as response:
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        raise OllamaBadAnswer(
                            f"Ollama at {self.url} sent an answer over {MAX_ANSWER_BYTES:,} bytes"
                        )
                    chunks.append(chunk)
                    if deadline - time.monotonic() <= 0:
                        raise httpx.ReadTimeout("the whole answer took too long")
                return Answer(response.status_code, b"".join(chunks))
        except httpx.ConnectTimeout as exc:  # the connect timeout, not the call's: say the time waited
            raise OllamaTimedOut(
                f"Ollama at {self.url} did not answer: it accepted no connection within {self.connect_timeout:g}s"
            ) from exc
        except httpx.TimeoutException as exc:
            raise OllamaTimedOut(f"Ollama at {self.url} did not answer within {self.timeout:g}s") from exc
        except httpx.HTTPError as exc:
            raise OllamaUnreachable(f"Ollama at {self.url} is unreachable ({type(exc).__name__})") from exc

    def http_error(self, response: Answer, model: str) -> str:
        """One sentence for a non-200 answer: the status and the start of what the server said (redacted,
        one line of printable characters: it is shown, and a server may echo what it was sent)."""
        from nexusmem.redact import said_line

        detail = said_line(response.text, 160, read=2000)
        return f"Ollama at {self.url} answered HTTP {response.status_code} for model {model!r}: {detail}"

    def chat_json(self, model: str, system: str, prompt: str, options: dict[str, Any]) -> Any:
        """The content of MODEL's non-streaming, JSON-format answer to SYSTEM + PROMPT (POST /api/chat); an
        older Ollama without /api/chat (HTTP 404 not naming the model) is asked through /api/generate.
        Raises OllamaUnreachable, OllamaHTTPError or OllamaBadAnswer."""
        response = self.post(
            "/api/chat",
            {
                "model": model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                "stream": False,
                "format": "json",
                "options": options,
            },
        )
        field_name = "message"
        if response.status_code == 404 and "model" not in response.text.lower():
            response = self.post(
                "/api/generate",
                {
                    "model": model,
                    "system": system,
                    "prompt": prompt,
                    "stream": False,
                    "format": "json",
                    "options": options,
                },
            )
            field_name = "response"
        if response.status_code != 200:
            raise OllamaHTTPError(self.http_error(response, model))
        try:
            data = response.json()
            return data["message"]["content"] if field_name == "message" else data["response"]
        except (ValueError, KeyError, TypeError) as exc:
            raise OllamaBadAnswer(f"Ollama at {self.url} sent an answer of the wrong shape") from exc

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


# An embedder that did not answer in time is not asked again for this long: every query would wait
# embed.QUERY_TIMEOUT for it (an agent pays it on every call), every sync SYNC_TIMEOUT. Remembered per URL
# in the user directory (0600), for every process of this user: the server is this machine's, not a
# project's. A refused connection is not remembered: it is found out by one stdlib connect, without importing
# httpx (reachable), and a server just started is used at once.
DOWN_SECONDS = 120.0
DOWN_FILE = "ollama-down.json"
# What to do about an Ollama embedder that does not answer (said by doctor, status and the auto-sync log).
EMBEDDER_FIX = "start it (`ollama serve`) or set embedding.provider to builtin in .nexusmem/config.json"


def _down_path() -> Path:
    from nexusmem import paths

    return paths.user_dir() / DOWN_FILE


def _read_down() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_down_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_down(data: dict[str, dict[str, Any]]) -> None:
    from nexusmem import private

    try:
        path = _down_path()
        if data:
            private.write_atomic(path, json.dumps(data, sort_keys=True).encode())
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass  # a user directory that cannot be written: every call waits again, as before


@dataclass(frozen=True)
class Down:
    """An Ollama URL that did not answer in time a moment ago: when, and what was said then."""

    url: str
    at: float  # time.time() of the failure
    why: str  # "Ollama at URL did not answer within 5s"

    def describe(self, now: float | None = None) -> str:
        """One phrase: what failed, how long ago, and when it is asked again."""
        now = time.time() if now is None else now
        ago = max(0, round(now - self.at))
        left = max(1, round(self.at + DOWN_SECONDS - now))
        return f"{self.why} {ago} s ago; not asked again for {left} s"


def recently_down(url: str, now: float | None = None) -> Down | None:
    """The failure remembered for URL (remember_down) when it is less than DOWN_SECONDS old, else None."""
    now = time.time() if now is None else now
    entry = _read_down().get(url.rstrip("/"))
    if not isinstance(entry, dict):
        return None
    at, why = entry.get("at"), entry.get("why")
    if not isinstance(at, (int, float)) or not isinstance(why, str) or not 0 <= now - at < DOWN_SECONDS:
        return None
    return Down(url.rstrip("/"), float(at), why)


def last_down(url: str) -> Down | None:
    """The failure remembered for URL however old: the last request this user's processes sent it did not
    answer in time (an answer since forgets it). None when there is none."""
    entry = _read_down().get(url.rstrip("/"))
    if not isinstance(entry, dict) or not isinstance(entry.get("at"), (int, float)):
        return None
    return Down(
        url.rstrip("/"), float(entry["at"]), str(entry.get("why") or f"Ollama at {url} did not answer")
    )


def remember_down(url: str, why: str) -> None:
    """Remember that URL did not answer in time (WHY, one sentence), for DOWN_SECONDS."""
    data = _read_down()
    data[url.rstrip("/")] = {"at": time.time(), "why": why}
    _write_down(data)


def forget_down(url: str) -> None:
    """URL answered: a failure remembered for it is forgotten (the file is not touched when there is none)."""
    data = _read_down()
    if data.pop(url.rstrip("/"), None) is not None:
        _write_down(data)
