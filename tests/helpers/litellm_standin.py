"""A stand-in for the LiteLLM proxy's key-management API, for `voicegate seat retire` tests.

Only what the audit reads, in the shapes the real proxy answers with:

* ``GET /key/list?page=&size=&return_full_object=true`` →
  ``{"keys": [...], "total_count", "current_page", "total_pages"}``; without
  ``return_full_object`` the keys are bare token hashes, as LiteLLM does.
* ``GET /key/info?key=<token hash or sk- secret>`` → ``{"key", "info": {...}}`` (the token
  itself popped from ``info``), 404 for an unknown key.
* ``GET /team/list`` → a list of team objects (``team_id``, ``team_alias``, ``models``).

LiteLLM stores a key as the sha256 of its secret and shows ``key_name`` as ``sk-...abcd``;
so does this. Every request is logged (method, path, query) so tests can prove the paging.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class LiteLLMStandin:
    def __init__(self, *, master_key: str = "sk-master-1234", keys: list[dict[str, Any]] | None = None,
                 teams: list[dict[str, Any]] | None = None, max_size: int = 100):
        self.master_key = master_key
        self.keys: list[dict[str, Any]] = []
        for k in keys or []:
            self.add_key(**k)
        self.teams = [dict(t) for t in teams or []]
        self.max_size = max_size
        self.log: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    def add_key(self, *, secret: str, models: list[str], key_alias: str | None = None,
                team_id: str | None = None) -> None:
        self.keys.append({"token": hash_token(secret), "key_name": f"sk-...{secret[-4:]}", "key_alias": key_alias,
                          "models": list(models), "team_id": team_id, "spend": 0.0, "user_id": None,
                          "metadata": {}})

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        owner = self

        class Handler(_Handler):
            standin = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def handle(self, path: str, query: dict[str, list[str]], auth: str | None) -> tuple[int, Any]:
        self.log.append({"path": path, "query": {k: v[0] for k, v in query.items()}})
        if auth != f"Bearer {self.master_key}":
            return 401, {"error": {"message": "Authentication Error, Invalid proxy server token passed.",
                                   "type": "auth_error", "param": "None", "code": "401"}}
        q = {k: v[0] for k, v in query.items()}
        if path == "/key/list":
            page, size = int(q.get("page", 1)), int(q.get("size", 10))
            if page < 1 or not 1 <= size <= self.max_size:
                return 422, {"detail": [{"msg": "Input should be less than or equal to 100"}]}
            chunk = self.keys[(page - 1) * size: page * size]
            full = q.get("return_full_object", "false").lower() == "true"
            total = len(self.keys)
            return 200, {"keys": [dict(k) for k in chunk] if full else [k["token"] for k in chunk],
                         "total_count": total, "current_page": page, "total_pages": -(-total // size)}
        if path == "/key/info":
            key = q.get("key", "")
            token = hash_token(key) if key.startswith("sk-") else key
            for k in self.keys:
                if k["token"] == token:
                    info = {kk: vv for kk, vv in k.items() if kk != "token"}
                    return 200, {"key": key, "info": info}
            return 404, {"error": {"message": "Key not found in database", "type": "not_found_error",
                                   "param": "key", "code": "404"}}
        if path == "/team/list":
            return 200, [dict(t) for t in self.teams]
        return 404, {"detail": "Not Found"}


class _Handler(BaseHTTPRequestHandler):
    standin: LiteLLMStandin
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        status, payload = self.standin.handle(parts.path, parse_qs(parts.query), self.headers.get("Authorization"))
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
