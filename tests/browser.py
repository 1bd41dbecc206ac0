"""A real headless browser (Debian's chromium + chromedriver through selenium) for the
tests that look at the HTML the plugin writes. Tests skip, naming what is missing, where
the browser is not installed; ``.ci/run`` installs it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def headless_browser(width: int = 1280, height: int = 1024) -> Iterator[Any]:
    """A chromium WebDriver with no network use beyond ``file://`` pages."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=driver_path)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, path: Path) -> None:
    """Load a local HTML file and wait until the document and its images have loaded."""
    driver.get(path.resolve().as_uri())
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "if (document.readyState === 'complete') { done(); } else { window.addEventListener('load', () => done()); }"
    )


def broken_images(driver: Any) -> list[str]:
    """The ``src`` (first 80 characters) of every image the browser could not decode."""
    return driver.execute_script(
        "return Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.src.slice(0, 80));"
    )
