"""The seat-URL check is the root package's (`voicegate/_seat_url.py`): `spec`, `seat` and `generate` share it.

Kept as a name here so `voicegate.spec._seat_url` keeps importing (tests reach inside).
"""

from voicegate._seat_url import check_seat_url, seat_url_problem, shown

__all__ = ["check_seat_url", "seat_url_problem", "shown"]
