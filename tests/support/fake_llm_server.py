"""A real HTTP server that speaks enough of the OpenAI chat-completions API for tests.

Runs stdlib ``http.server`` in a thread on 127.0.0.1 with an ephemeral port. Tests script the
replies (message contents, or HTTP error statuses) and read back the JSON bodies it received.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply: a message content, or an HTTP error status with a body."""

    content: str | None = None
    status: int = 200
    finish_reason: str = "stop"
    hold: threading.Event | None = None  # the handler waits for this before answering


@dataclass
class _State:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        state = self.server.state
        with state.lock:
            state.paths.append(self.path)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            try:
                state.requests.append(json.loads(raw))
            except ValueError:
                state.requests.append({"_unparsable": raw.decode(errors="replace")})
            reply = state.replies.popleft() if state.replies else None
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "nf"}})
            return
        if reply is None:
            self._send_json(500, {"error": {"message": "no scripted reply left", "type": "test"}})
            return
        if reply.hold is not None:
            reply.hold.wait(timeout=30)
        if reply.status != 200:
            self._send_json(reply.status, {"error": {"message": "scripted error", "type": "test"}})
            return
        model = state.requests[-1].get("model", "fake-model")
        self._send_json(
            200,
            {
                "id": f"chatcmpl-fake-{len(state.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                        "logprobs": None,
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that gave up (timeout test) leaves a broken pipe behind: not worth a traceback.
        pass


class FakeLlmServer:
    """Use as ``with FakeLlmServer() as srv:``, then ``srv.reply(...)`` and ``srv.base_url``."""

    def __init__(self) -> None:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.state = _State()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._httpd.state.lock:
            return list(self._httpd.state.requests)

    @property
    def headers(self) -> list[dict[str, str]]:
        with self._httpd.state.lock:
            return list(self._httpd.state.headers)

    def reply(self, *contents: str | Reply) -> None:
        """Queue replies, answered in order, one per request."""
        with self._httpd.state.lock:
            for c in contents:
                self._httpd.state.replies.append(c if isinstance(c, Reply) else Reply(content=c))

    def start(self) -> FakeLlmServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLlmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
