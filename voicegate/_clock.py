"""The one clock every record reads: SOURCE_DATE_EPOCH pins it so records are reproducible."""

from __future__ import annotations

import datetime as _dt
import os


def now_utc() -> _dt.datetime:
    """Now in UTC to the second, or the instant SOURCE_DATE_EPOCH names."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return _dt.datetime.fromtimestamp(int(epoch), _dt.UTC)
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0)
