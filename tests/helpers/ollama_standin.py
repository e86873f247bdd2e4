"""A real HTTP server on 127.0.0.1 that speaks Ollama's /api/embed, for the real httpx client code."""

from __future__ import annotations

import json
import math
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIM = 16


def toy_embedding(text: str, dim: int = DIM) -> list[float]:
    """Letter-trigram hashing, normalised: texts sharing words get close vectors (deterministic)."""
    vec = [0.0] * dim
    low = f"  {text.lower()}  "
    for i in range(len(low) - 2):
        vec[sum(map(ord, low[i : i + 3])) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


class Standin:
    """Mode "ok" answers properly; "malformed" answers JSON of the wrong shape; "garbage" answers non-JSON;
    "missing-model" answers 404 like Ollama does for a model that was never pulled; "hang" accepts the
    request and never answers (until the stand-in stops); "slow" answers properly after DELAY seconds (a model
    loading before its first answer). POISON: a text holding
    one of its keys is answered the vector its value names ("nan", "inf" or "zero"), as a broken model does.
    BEFORE, when set, runs as each request arrives, before it is answered (a test's step in mid-sync)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.dim = DIM
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        self.poison: dict[str, str] = {}
        self.stop = threading.Event()
        self.before: Callable[[], None] | None = None
        self.delay = 0.0

    def vector(self, text: str) -> list[float]:
        for key, kind in self.poison.items():
            if key in text:
                value = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}[kind]
                return [value] * self.dim
        return toy_embedding(text, self.dim)


@contextmanager
def ollama_standin(port: int = 0) -> Iterator[Standin]:
    """The stand-in on 127.0.0.1:PORT (a free port when 0), served until the block ends."""
    state = Standin()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append(body)
            if state.before is not None:
                state.before()
            if state.mode == "hang":
                state.stop.wait(600)
                return
            if state.mode == "slow":
                state.stop.wait(state.delay)
            if self.path != "/api/embed":
                self._send(404, b'{"error": "not found"}')
            elif state.mode == "missing-model":
                self._send(404, json.dumps({"error": f'model "{body.get("model")}" not found'}).encode())
            elif state.mode == "leaky-error":
                self._send(
                    500,
                    b"upstream failed; auth ghp_R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2Ga8Ne \x1b]52;c;aGk=\x07 retry",
                )
            elif state.mode == "garbage":
                self._send(200, b"<html>proxy error</html>")
            elif state.mode == "malformed":
                self._send(200, json.dumps({"embedding": [0.1, 0.2]}).encode())
            else:
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                answer = {"model": body["model"], "embeddings": [state.vector(t) for t in texts]}
                self._send(200, json.dumps(answer).encode())

        def _send(self, code: int, payload: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def never_accepting() -> Iterator[str]:
    """A loopback URL whose listening socket never accepts: its backlog (0) is full, so a new connection's
    SYN is dropped and connecting hangs until the client's connect timeout (Linux drops it; a system that
    answers a full backlog with a refusal fails the check at the start: the caller skips). Offline."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers: list[socket.socket] = []
    try:
        for _ in range(4):  # backlog 0 holds one; more make sure it is full
            filler = socket.socket()
            filler.setblocking(False)
            with suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()


def hangs_connecting(url: str, timeout: float = 0.3) -> bool:
    """Whether connecting to URL's port on 127.0.0.1 neither succeeds nor fails within TIMEOUT seconds."""
    probe = socket.socket()
    probe.settimeout(timeout)
    try:
        probe.connect(("127.0.0.1", int(url.rsplit(":", 1)[1])))
    except TimeoutError:
        return True
    except OSError:
        return False
    finally:
        probe.close()
    return False


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"
