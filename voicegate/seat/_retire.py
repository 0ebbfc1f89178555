"""Before a voice's LiteLLM alias is removed: who still names it?

Retiring an alias does not fail loudly. Every scoped key whose ``models`` allowlist names
it starts answering 403 on that one endpoint, and nobody is told (it once took two and a
half months to notice). So every key is audited through the proxy's own HTTP API —
``/key/list`` page by page with full objects, then ``/key/info`` for each key's allowlist —
and every team through ``/team/list``. An empty allowlist means *all models*, so those
keys and teams are named too: they reach the alias today. Keys are named by their alias
or LiteLLM's abbreviated key name, never by a secret. Nothing is changed on the proxy.

The litellm package is deliberately not imported: HTTP is the proxy's stable interface,
and its dependency tree has no business in voicegate's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from voicegate._errors import SeatUnreachable, VoicegateError

PAGE_SIZE = 100   # LiteLLM's maximum `size` for /key/list
MAX_PAGES = 10_000
ALL_MODELS_MARKERS = {"*", "all-proxy-models"}   # LiteLLM spellings of "every model"
TEAM_MODELS_MARKER = "all-team-models"            # a key that defers to its team's list


@dataclass
class Holder:
    """A key or team that would lose (or silently keep hoping for) the alias."""

    kind: str                 # "key" | "team"
    label: str                # key alias / abbreviated key name / team alias — never a secret
    id: str                   # masked token hash, or team id
    reason: str               # "names the alias" | "empty allowlist: all models" | ...
    team: str | None = None
    models: list[str] = field(default_factory=list)


@dataclass
class RetireAudit:
    alias: str
    litellm_url: str
    config_entries: list[dict[str, Any]]
    config_path: str | None
    keys_audited: int
    teams_audited: int
    pages: int
    holders: list[Holder]
    warnings: list[str] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.holders

    def as_json(self) -> dict[str, Any]:
        return {"alias": self.alias, "litellm": self.litellm_url, "safe": self.safe,
                "config": {"path": self.config_path, "model_list": self.config_entries},
                "keys_audited": self.keys_audited, "teams_audited": self.teams_audited, "pages": self.pages,
                "holders": [h.__dict__ for h in self.holders], "warnings": self.warnings}


def mask(secret_or_hash: str | None) -> str:
    """Enough of a token to recognise it in the LiteLLM UI, never enough to use it."""
    if not secret_or_hash:
        return "?"
    s = str(secret_or_hash)
    return f"{s[:3]}…{s[-4:]}" if len(s) > 10 else "…"


def config_entries(config: Path, alias: str) -> list[dict[str, Any]]:
    """The `model_list` entries of a LiteLLM config that serve ``alias`` (secrets dropped)."""
    from voicegate._yaml import read_yaml

    raw = read_yaml(config, "LiteLLM config")
    if not isinstance(raw, dict) or not isinstance(raw.get("model_list", []), list):
        raise VoicegateError(f"{config}: no model_list")
    out = []
    for entry in raw.get("model_list") or []:
        if isinstance(entry, dict) and entry.get("model_name") == alias:
            params = dict(entry.get("litellm_params") or {})
            for secret in ("api_key", "aws_secret_access_key", "vertex_credentials"):
                if secret in params:
                    params[secret] = "(hidden)"
            out.append({"model_name": alias, "litellm_params": params,
                        "model_info": entry.get("model_info") or {}})
    return out


class _Proxy:
    def __init__(self, url: str, master_key: str, timeout: float):
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=timeout,
                                 headers={"Authorization": f"Bearer {master_key}"})

    def get(self, path: str, **params: Any) -> Any:
        try:
            r = self.http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise SeatUnreachable(f"LiteLLM at {self.url} could not be reached ({type(exc).__name__}: {exc})") from None
        if r.status_code in (401, 403):
            raise VoicegateError(f"LiteLLM refused the master key on {path} ({r.status_code}); "
                                 "check the environment variable named by --master-key-env")
        if r.status_code >= 400:
            raise VoicegateError(f"LiteLLM answered {r.status_code} on GET {path}: {r.text[:200]}")
        try:
            return r.json()
        except ValueError:
            raise VoicegateError(f"LiteLLM answered non-JSON on GET {path}") from None

    def close(self) -> None:
        self.http.close()


def _list_keys(proxy: _Proxy, page_size: int) -> tuple[list[Any], int]:
    """Every key object, following /key/list's pages to ``total_pages``."""
    keys: list[Any] = []
    page, pages = 1, 0
    while page <= MAX_PAGES:
        data = proxy.get("/key/list", page=page, size=page_size, return_full_object="true")
        pages += 1
        if isinstance(data, list):   # very old proxies: a bare list, no paging
            keys.extend(data)
            break
        if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise VoicegateError("LiteLLM /key/list answered an unexpected shape (no 'keys' list)")
        keys.extend(data["keys"])
        total_pages = data.get("total_pages")
        if not isinstance(total_pages, int):
            total_count = data.get("total_count")
            total_pages = -(-total_count // page_size) if isinstance(total_count, int) else page
        if page >= total_pages or not data["keys"]:
            break
        page += 1
    return keys, pages


def _team_list(proxy: _Proxy) -> list[dict[str, Any]]:
    data = proxy.get("/team/list")
    if isinstance(data, dict):
        data = data.get("teams", data.get("data", []))
    if not isinstance(data, list):
        raise VoicegateError("LiteLLM /team/list answered an unexpected shape")
    return [t for t in data if isinstance(t, dict)]


def _reach(models: list[str], alias: str) -> str | None:
    """Why an allowlist reaches the alias, or None when it does not."""
    if not models:
        return "empty allowlist: all models"
    if alias in models:
        return "names the alias"
    if ALL_MODELS_MARKERS & set(models):
        return f"allowlist {min(ALL_MODELS_MARKERS & set(models))}: all models"
    return None


def audit(alias: str, litellm_url: str, master_key: str, *, config: Path | None = None,
          page_size: int = PAGE_SIZE, timeout: float = 30.0) -> RetireAudit:
    entries = config_entries(config, alias) if config is not None else []
    warnings = []
    if config is not None and not entries:
        warnings.append(f"{config}: no model_list entry names {alias!r} (already removed from the config?)")
    proxy = _Proxy(litellm_url, master_key, timeout)
    try:
        raw_keys, pages = _list_keys(proxy, page_size)
        teams = _team_list(proxy)
        team_models: dict[str, list[str]] = {}
        team_label: dict[str, str] = {}
        holders: list[Holder] = []
        for t in teams:
            tid = str(t.get("team_id") or "")
            models = [str(m) for m in (t.get("models") or [])]
            team_models[tid] = models
            team_label[tid] = str(t.get("team_alias") or tid)
            why = _reach(models, alias)
            if why:
                holders.append(Holder("team", team_label[tid], tid, why, models=models))
        for k in raw_keys:
            obj: dict[str, Any] = k if isinstance(k, dict) else {"token": str(k)}
            token = obj.get("token") or obj.get("key")
            # /key/info is the authority on a key's allowlist; the list entry may be abridged.
            info = proxy.get("/key/info", key=token) if token else {}
            detail = info.get("info", {}) if isinstance(info, dict) else {}
            detail = detail if isinstance(detail, dict) else {}
            merged = {**obj, **{k2: v for k2, v in detail.items() if v is not None}}
            models = [str(m) for m in (merged.get("models") or [])]
            team = merged.get("team_id")
            label = merged.get("key_alias") or merged.get("key_name") or mask(token)
            why = _reach([m for m in models if m != TEAM_MODELS_MARKER], alias)
            if (team and team in team_models and (not models or models == [TEAM_MODELS_MARKER])):
                # An empty key list inside a team defers to the team's allowlist.
                tw = _reach(team_models[team], alias)
                why = f"inherits team {team_label[team]}'s allowlist ({tw})" if tw else None
            if why:
                holders.append(Holder("key", str(label), mask(token), why,
                                      team=team_label.get(team, team) if team else None, models=models))
    finally:
        proxy.close()
    return RetireAudit(alias=alias, litellm_url=litellm_url, config_entries=entries,
                       config_path=str(config) if config else None, keys_audited=len(raw_keys),
                       teams_audited=len(teams), pages=pages, holders=holders, warnings=warnings)


def render_audit(a: RetireAudit) -> str:
    lines = [f"alias {a.alias} on {a.litellm_url}"]
    for e in a.config_entries:
        p = e["litellm_params"]
        lines.append(f"  config model_list: model={p.get('model')} api_base={p.get('api_base')}")
    lines.append(f"audited {a.keys_audited} key(s) over {a.pages} page(s) of /key/list, {a.teams_audited} team(s)")
    for h in a.holders:
        team = f" (team {h.team})" if h.team else ""
        lines.append(f"  {h.kind} {h.label} [{h.id}]{team}: {h.reason}")
    for w in a.warnings:
        lines.append(f"warning: {w}")
    if a.safe:
        lines.append(f"safe to retire {a.alias}: no key or team allowlist reaches it")
    else:
        lines.append(f"NOT safe to retire {a.alias}: repoint the {len(a.holders)} key(s)/team(s) above first "
                     "(removing the alias turns their calls into 403s)")
    return "\n".join(lines)
