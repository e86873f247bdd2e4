"""A real HTTP server on 127.0.0.1 speaking Ollama's /api/chat, /api/generate and /api/embed, for the
contradiction judge's real httpx client.

Its "model" says a pair contradicts when the NEWER note contains "no longer"; asked to summarise a session
(the system prompt says "coding session"), it answers {"title": state.title, "summary": one line per
PERSON line of the prompt}, so a summary says what the session said. Modes: "ok"; "slow" (sleeps
`delay` seconds first); "malformed" (an answer that is not the JSON asked for); "garbage" (not JSON at
all); "no-chat" (404 on /api/chat like an old Ollama, so the client must use /api/generate); "trickle"
(the headers at once, then the answer one byte every 0.2 s: no single read waits long, the whole takes
minutes).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from helpers.ollama_standin import toy_embedding


class ChatStandin:
    def __init__(self) -> None:
        self.mode = "ok"
        self.delay = 2.0
        self.trickle_every = 0.2  # "trickle": seconds between two bytes
        self.title: object = "Fix the flaky cache eviction test"
        self.reason: str | None = None  # the judge's reason for a contradiction, when set
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.url = ""

    def judged(self) -> int:
        return sum(1 for path, _ in self.requests if path in ("/api/chat", "/api/generate"))


def verdict(prompt: str) -> dict[str, Any]:
    newer = prompt.split("NEWER", 1)[-1].lower()
    if "no longer" in newer:
        return {"contradicts": True, "reason": "the newer note says it no longer holds"}
    return {"contradicts": False, "reason": "different topics"}


def summary_of(prompt: str) -> str:
    """One bullet per PERSON line of a session prompt: a summary that says what was asked."""
    asked = [line.split("PERSON:", 1)[1].strip() for line in prompt.splitlines() if "PERSON:" in line]
    return "\n".join(f"- Discussed: {text}" for text in asked) or "- Nothing was asked."


@contextmanager
def chat_standin() -> Iterator[ChatStandin]:
    state = ChatStandin()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append((self.path, body))
            if state.mode == "slow":
                time.sleep(state.delay)
            if self.path == "/api/embed":
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                self._send(200, {"model": body["model"], "embeddings": [toy_embedding(t) for t in texts]})
            elif self.path == "/api/chat" and state.mode != "no-chat":
                prompt = body["messages"][-1]["content"]
                system = body["messages"][0]["content"] if len(body["messages"]) > 1 else ""
                assert body["stream"] is False and body["format"] == "json"
                self._send(
                    200,
                    {
                        "model": body["model"],
                        "message": {"role": "assistant", "content": self._answer(prompt, system)},
                    },
                )
            elif self.path == "/api/generate":
                assert body["stream"] is False
                answer = self._answer(body["prompt"], body.get("system", ""))
                self._send(200, {"model": body["model"], "response": answer, "done": True})
            else:
                self._send(404, {"error": "404 page not found"})

        def _answer(self, prompt: str, system: str) -> str:
            if state.mode == "malformed":
                return "Sure! The notes look related."
            if "coding session" in system:
                return json.dumps({"title": state.title, "summary": summary_of(prompt)})
            answer = verdict(prompt)
            if state.reason is not None and answer["contradicts"]:
                answer["reason"] = state.reason
            return json.dumps(answer)

        def _send(self, code: int, obj: Any) -> None:
            payload = b"<html>bad gateway</html>" if state.mode == "garbage" else json.dumps(obj).encode()
            if state.mode == "trickle":
                payload += b" " * 1000
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if state.mode == "trickle":
                    for i in range(len(payload)):
                        self.wfile.write(payload[i : i + 1])
                        self.wfile.flush()
                        time.sleep(state.trickle_every)
                    return
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
