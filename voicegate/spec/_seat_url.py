"""The one check of a seat URL, shared by the spec, `generate --seat` and `voicegate seat --seat`.

Three copies used to disagree (one accepted `http://` with no host, one did not strip
the trailing slash); a URL refused by one command and accepted by another is a bug.
"""

from __future__ import annotations

import re

from voicegate._errors import VoicegateError

_HTTP_URL = re.compile(r"https?://[^/\s]+")


def seat_url_problem(url: object) -> str | None:
    """What is wrong with `url` as a seat's OpenAI base URL, or None when it is fine."""
    if not isinstance(url, str) or not url.strip():
        return "must be a non-empty string"
    if not _HTTP_URL.match(url):
        return f"must be an http(s) URL such as http://host:port/v1, got {url!r}"
    return None


def check_seat_url(url: object, where: str) -> str:
    """`url` without its trailing slash; a bad one is a VoicegateError '<where>: <problem>'."""
    problem = seat_url_problem(url)
    if problem is not None or not isinstance(url, str):
        raise VoicegateError(f"{where}: {problem}")
    return url.rstrip("/")
