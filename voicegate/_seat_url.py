"""The one check of a seat URL, shared by the spec, `generate --seat` and `voicegate seat --seat`.

Three copies used to disagree (one accepted `http://` with no host, one did not strip
the trailing slash); a URL refused by one command and accepted by another is a bug.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from voicegate._errors import VoicegateError

_USERINFO = re.compile(r"//.*@")

# Routes under the base URL: a URL that ends in one was copied from a request, not from the seat.
_ENDPOINTS = ("/chat/completions", "/completions", "/models", "/embeddings", "/load_lora_adapter",
              "/unload_lora_adapter")


def shown(url: str) -> str:
    """`url` fit to print: any user:password@ replaced, even in a URL too broken to parse."""
    return _USERINFO.sub("//***@", url)


def seat_url_problem(url: object) -> str | None:
    """What is wrong with `url` as a seat's OpenAI base URL, or None when it is fine.

    The problem never repeats a credential the URL carries.
    """
    if not isinstance(url, str) or not url.strip():
        return "must be a non-empty string"
    safe = shown(url)
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return f"must be one line without spaces or control characters, got {safe!r}"
    example = "such as http://host:port/v1"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return f"must be an http(s) URL {example} with a port from 1 to 65535, got {safe!r}"
    if parts.scheme not in ("http", "https") or not url.startswith(f"{parts.scheme}://"):
        return f"must be an http(s) URL {example}, got {safe!r}"
    if not parts.hostname:
        return f"must be an http(s) URL that names a host, {example}, got {safe!r}"
    if port == 0:
        return f"must be an http(s) URL {example} with a port from 1 to 65535, got {safe!r}"
    return _base_problem(url, parts.path)


def _base_problem(url: str, path: str) -> str | None:
    """A URL that is not the OpenAI *base* URL: no path at all, or a route under the base."""
    path = path.rstrip("/")
    base = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    rule = "must be the OpenAI base URL, ending in /v1"
    if not path:
        return f"{rule}, such as {shown(base)}/v1 (the routes /v1/models and /v1/chat/completions sit under it), " \
               f"got {shown(url)!r}"
    for endpoint in _ENDPOINTS:
        if path.endswith(endpoint):
            return f"{rule}, such as {shown(base.removesuffix(endpoint))} (without {endpoint}: voicegate adds " \
                   f"the route itself), got {shown(url)!r}"
    return None


def check_seat_url(url: object, where: str) -> str:
    """`url` without its trailing slash; a bad one is a VoicegateError '<where>: <problem>'."""
    problem = seat_url_problem(url)
    if problem is not None or not isinstance(url, str):
        raise VoicegateError(f"{where}: {problem}")
    return url.rstrip("/")
