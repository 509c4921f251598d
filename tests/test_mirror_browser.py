"""The mirror opened from file:// in headless Chromium with the site gone: each page renders with
its stylesheets (nested @import too), its script and its images, and no request is made."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urljoin

import lxml.html
import pytest
from mirrorsite import fill

from minicrawl.demo.site import LocalSite

ROOT = Path(__file__).resolve().parent.parent
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


class Listener:
    """A socket on the dead site's port, counting whoever connects (nothing should)."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def test_the_mirror_renders_offline_with_its_css_script_and_images(tmp_path) -> None:
    chromium = browser()
    if chromium is None:
        pytest.skip("no Chromium binary (chromium, chromium-browser, google-chrome): "
                    ".ci/run installs it")
    with LocalSite() as site, LocalSite(host="127.0.0.2") as cdn:
        fill(site, cdn)
        done = subprocess.run([sys.executable, str(ROOT / "run.py"), site.url("/"), "--mirror",
                               "m", "--delay", "0", "--quiet", "--mirror-external-requisites"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        port, cdn_port = site.port, cdn.port
    # the site is gone; whoever knocks at its ports is counted
    listeners = [Listener("127.0.0.1", port), Listener("127.0.0.2", cdn_port)]
    try:
        host = tmp_path / "m" / f"127.0.0.1:{port}"
        for page in ("index.html", "docs/index.html", "docs/page.html",
                     "list?page=2&sort=up.html", "about.html", "café/naïve.html"):
            args = [chromium, "--headless", "--disable-gpu", "--no-first-run",
                    "--virtual-time-budget=5000", f"--user-data-dir={tmp_path / 'profile'}",
                    "--dump-dom", (host / page).as_uri()]
            if hasattr(os, "geteuid") and os.geteuid() == 0:  # Chromium's sandbox refuses root
                args.insert(1, "--no-sandbox")
            shown = subprocess.run(args, capture_output=True, text=True, timeout=120,
                                   stdin=subprocess.DEVNULL)
            assert shown.returncode == 0, shown.stderr[-2000:]
            body = lxml.html.document_fromstring(shown.stdout).find("body")
            assert body.get("data-ran") == "yes", (page, shown.stdout[:500])  # the script ran
            assert body.get("data-img") == "2", page  # the logo loaded: 2 px wide
            assert body.get("data-color") == "rgb(1, 2, 3)", page  # base.css, @imported
            nested = body.get("data-nested") or ""
            assert nested.startswith('url("file://') and "/img/n.png" in nested, page
        # a name Windows reserves, escaped (%43ON.html), is reached by its link from the page
        index = host / "index.html"
        hrefs = [a.get("href") for a in lxml.html.parse(str(index)).iter("a")]
        for escaped, path in (("%2543ON.html", "/CON"), ("%2561ux.txt.html", "/aux.txt")):
            assert escaped in hrefs, hrefs
            args = [chromium, "--headless", "--disable-gpu", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                    urljoin(index.as_uri(), escaped)]
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                args.insert(1, "--no-sandbox")
            shown = subprocess.run(args, capture_output=True, text=True, timeout=120,
                                   stdin=subprocess.DEVNULL)
            assert f"<p>{path}</p>" in shown.stdout, (escaped, shown.stdout[:500])
        shot = tmp_path / "index.png"  # what it looks like, kept with the test's files
        args = [chromium, "--headless", "--disable-gpu", "--no-first-run",
                f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                "--window-size=800,600", (host / "index.html").as_uri()]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        subprocess.run(args, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        assert shot.read_bytes().startswith(b"\x89PNG")
        assert [listener.connections for listener in listeners] == [0, 0]  # no request made
    finally:
        for listener in listeners:
            listener.close()
