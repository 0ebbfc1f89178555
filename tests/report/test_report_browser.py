"""The report in a real browser: headless Chromium loads the page from disk and screenshots it.

How console errors are caught: Chromium is started with `--enable-logging=stderr
--v=0`, which makes it copy every console message of the page to stderr as a
line containing `:CONSOLE` (e.g. `INFO:CONSOLE:1] "Uncaught Error: ..."`, and
CSP violations such as a blocked inline style or script). The page has no script
at all, so ANY console line is a failure: the test asserts there are none. Two
negative controls prove the detector sees an uncaught error and a CSP violation,
and a third proves the blank check sees a blank page.

Chromium is Debian's `chromium` package (`apt-get install -y chromium`); the
tests skip cleanly when it is absent. `VOICEGATE_CHROMIUM` names another binary.
Set `VOICEGATE_UPDATE_SCREENSHOT=1` to refresh `docs/report-lv-bronte.png`.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers.dom import chromium
from helpers.report_data import reference_data

from voicegate.report import render_report

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
DOC_SHOT = REPO / "docs" / "report-lv-bronte.png"
CONSOLE = re.compile(r":CONSOLE[:(]")


def screenshot(html: Path, png: Path, width: int, height: int, profile: Path) -> list[str]:
    """Load `html` from disk, write a width x height screenshot; return the page's console lines."""
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           f"--screenshot={png}", f"--window-size={width},{height}", html.resolve().as_uri()]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert png.is_file(), f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    return [line for line in done.stderr.splitlines() if CONSOLE.search(line)]


def read_png(path: Path) -> np.ndarray:
    """A minimal PNG decoder (8-bit, non-interlaced; what Chromium writes): rows x cols x channels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0, "unsupported PNG"
            ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = [0] * stride
    for y in range(h):
        f, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 0:
            cur = list(line)
        elif f == 1:  # Sub: a running sum per channel
            cur = (np.cumsum(np.frombuffer(line, np.uint8).reshape(w, ch).astype(np.int64), axis=0) % 256
                   ).astype(np.uint8).reshape(-1).tolist()
        elif f == 2:  # Up
            cur = ((np.frombuffer(line, np.uint8).astype(np.int64) + np.asarray(prev)) % 256).tolist()
        else:  # Average / Paeth: sequential, plain Python
            cur = [0] * stride
            for i in range(stride):
                a = cur[i - ch] if i >= ch else 0
                b = prev[i]
                if f == 3:
                    p = (a + b) >> 1
                else:
                    c = prev[i - ch] if i >= ch else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (line[i] + p) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)


def ink_fraction(img: np.ndarray) -> float:
    """Share of pixels that are not near-white: ~0 for a blank page."""
    rgb = img[..., :3].astype(np.int16)
    return float((rgb.min(axis=2) < 200).mean())


def assert_not_blank(img: np.ndarray) -> None:
    grey = img[..., :3].mean(axis=2)
    assert ink_fraction(img) > 0.02, f"screenshot looks blank ({ink_fraction(img):.4f} ink)"
    assert grey.std() > 20, f"screenshot has no contrast (std {grey.std():.1f})"
    # Ink in the top, middle and bottom thirds: the page drew more than a header.
    thirds = np.array_split(img, 3, axis=0)
    assert all(ink_fraction(t) > 0.005 for t in thirds)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "lv-bronte.html"
    path.write_text(render_report(reference_data()), encoding="utf-8")
    return path


def test_reference_report_renders_in_chromium_without_console_errors(page_file: Path, tmp_path: Path):
    png = tmp_path / "desktop.png"
    console = screenshot(page_file, png, 1280, 2200, tmp_path / "profile")
    assert console == []
    img = read_png(png)
    assert img.shape[:2] == (2200, 1280)
    assert_not_blank(img)
    if os.environ.get("VOICEGATE_UPDATE_SCREENSHOT"):
        DOC_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, DOC_SHOT)


def test_reference_report_renders_at_phone_width(page_file: Path, tmp_path: Path):
    png = tmp_path / "phone.png"
    console = screenshot(page_file, png, 390, 1600, tmp_path / "profile")
    assert console == []
    img = read_png(png)
    assert img.shape[:2] == (1600, 390)
    assert_not_blank(img)


def test_console_detector_sees_an_uncaught_error(tmp_path: Path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><p>x</p><script>throw new Error("boom-7f3a")</script>', encoding="utf-8")
    console = screenshot(bad, tmp_path / "bad.png", 400, 300, tmp_path / "profile")
    assert any("Uncaught" in line and "boom-7f3a" in line for line in console), console


def test_console_detector_sees_a_csp_violation_in_the_report(page_file: Path, tmp_path: Path):
    # An inline style attribute is not allowed by the report's CSP: the browser must say so.
    html = page_file.read_text(encoding="utf-8").replace("<main>", '<main><p style="color:#333">x</p>', 1)
    bad = tmp_path / "csp.html"
    bad.write_text(html, encoding="utf-8")
    console = screenshot(bad, tmp_path / "csp.png", 800, 600, tmp_path / "profile")
    assert any("Content Security Policy" in line for line in console), console


def test_blank_detector_sees_a_blank_page(tmp_path: Path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title><body></body>", encoding="utf-8")
    png = tmp_path / "blank.png"
    assert screenshot(blank, png, 640, 480, tmp_path / "profile") == []
    with pytest.raises(AssertionError, match="blank"):
        assert_not_blank(read_png(png))


def test_png_decoder_round_trip(tmp_path: Path):
    # Every filter type the decoder handles, on known pixels (written with filter bytes 0..4).
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, size=(5, 6, 3), dtype=np.uint8)
    rows = []
    prev = np.zeros(18, dtype=np.int64)
    for y in range(5):
        cur = img[y].reshape(-1).astype(np.int64)
        left = np.concatenate([np.zeros(3, np.int64), cur[:-3]])
        upleft = np.concatenate([np.zeros(3, np.int64), prev[:-3]])
        if y == 0:
            enc = cur
        elif y == 1:
            enc = cur - left
        elif y == 2:
            enc = cur - prev
        elif y == 3:
            enc = cur - (left + prev) // 2
        else:
            pa, pb, pc = abs(prev - upleft), abs(left - upleft), abs(left + prev - 2 * upleft)
            enc = cur - np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
        rows.append(bytes([y]) + (enc % 256).astype(np.uint8).tobytes())
        prev = cur

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    path = tmp_path / "t.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 6, 5, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))
    assert np.array_equal(read_png(path), img)
