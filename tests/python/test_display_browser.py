"""Every HTML repr rendered the way a person sees it: headless Chromium screenshots a page holding
the block, and the test checks the PNG is a real picture whose content fits the window (nothing
cut off at the bottom or the right edge), in a light page and a dark one.

Skipped cleanly where no Chromium is installed (``bash scripts/setup_notebook.sh`` installs
Debian's). ``VLLM_MEM_SCREENSHOTS=docs/img`` also writes the light screenshots, cropped to the
block, to that folder (how docs/img/repr_*.png are made; see docs/notebooks.md)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_display import samples

BROWSER = next((path for path in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if path),
               None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium (bash scripts/setup_notebook.sh)")

# The page lets a block's overflow show, so content wider than the block's frame (max-width 780 px,
# after the page's 16 px margin) is drawn past the frame's right border, where the test looks for it.
WIDTH, HEIGHT = 830, 1600
FRAME_RIGHT = 16 + 780
THEMES = {"light": ("#ffffff", "#1f2328"), "dark": ("#111111", "#d4d4d4")}  # JupyterLab's light and dark
PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>{name}</title>"
        "<style>.vllm-mem,.vllm-mem-scroll{{overflow:visible!important}}</style></head>"
        "<body style='margin:16px;background:{bg};color:{fg};font-size:14px'>{block}</body></html>")


@pytest.fixture(scope="module")
def objects() -> dict[str, Any]:
    return samples()


def screenshot(block: str, png: Path, *, theme: str = "light", name: str = "vllm_mem") -> Path:
    """Render ``block`` in a page of ``theme`` and screenshot it with headless Chromium."""
    assert BROWSER is not None
    bg, fg = THEMES[theme]
    page = png.with_suffix(".html")
    page.write_text(PAGE.format(name=name, bg=bg, fg=fg, block=block), encoding="utf-8")
    profile = png.parent / f"chromium-profile-{png.stem}"
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-dev-shm-usage", "--disable-extensions", f"--user-data-dir={profile}",
           f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png}", page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.rmtree(profile, ignore_errors=True)
    return png


def png_size(png: Path) -> tuple[int, int]:
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def content_box(png: Path, background: str) -> tuple[int, int, int, int] | None:
    """The bounding box of everything that is not the page background (needs Pillow, which
    matplotlib brings); ``None`` without Pillow."""
    try:
        from PIL import Image, ImageChops
    except ImportError:
        return None
    with Image.open(png) as image:
        rgb = image.convert("RGB")
        box = ImageChops.difference(rgb, Image.new("RGB", rgb.size, background)).getbbox()
    assert box is not None, "the screenshot is blank"
    return box


def crop_to(png: Path, box: tuple[int, int, int, int], target: Path) -> None:
    from PIL import Image

    with Image.open(png) as image:
        bottom = min(image.height, box[3] + 16)
        # 256 colours chosen by maximum coverage (method 1): within 4/255 of the screenshot's colours
        # on these flat blocks, at a third of the bytes (median cut shifted the swatches visibly).
        image.crop((0, 0, image.width, bottom)).convert("RGB").quantize(colors=256, method=1).save(
            target, optimize=True)


NAMES = ["model_spec", "kv_capacity", "snapshot", "snapshot_difference", "profiling", "plan", "plan_two_gpus",
         "stage_check", "rank_plans", "sweep"]


# Every block in the light theme; three in the dark one (JupyterLab's dark background), to keep the run short.
@pytest.mark.parametrize("name, theme", [(n, "light") for n in NAMES]
                         + [(n, "dark") for n in ("plan", "profiling", "stage_check")])
def test_repr_renders_in_chromium(objects: dict[str, Any], name: str, theme: str, tmp_path: Path) -> None:
    png = screenshot(objects[name]._repr_html_(), tmp_path / f"repr_{name}.png", theme=theme, name=name)
    assert png_size(png) == (WIDTH, HEIGHT)
    assert png.stat().st_size > 12_000  # a blank page of this size compresses to ~7 KB
    box = content_box(png, THEMES[theme][0])
    if box is None:
        return
    left, top, right, bottom = box
    assert bottom - top > 80 and right - left > 300, f"{name}: almost nothing drawn ({box})"
    assert bottom < HEIGHT - 4, f"{name}: the block is taller than the window, its end is cut off"
    assert right <= FRAME_RIGHT + 1, f"{name}: content runs {right - FRAME_RIGHT} px past the block's right border"
    out = os.environ.get("VLLM_MEM_SCREENSHOTS")
    if out and theme == "light":
        Path(out).mkdir(parents=True, exist_ok=True)
        crop_to(png, box, Path(out) / png.name)
    elif out and name == "plan":
        crop_to(png, box, Path(out) / "repr_plan_dark.png")
