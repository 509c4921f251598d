"""Record what headless Chromium finds on each link case page: tests/data/linkcases/truth.json.

Not run by the test suite (CI has no browser); run by hand after adding or changing a case:

    apt-get install -y chromium chromium-driver
    PYTHONPATH=. python tests/linkcases_record.py [CASE ...]

With case names, only those cases are loaded and their truth replaced (new cases added); the
others' truth is kept as recorded, which needs the same Chromium (else it stops, saying so).

It serves the cases (tests/linkcases.py's CaseSite) on 127.0.0.1, starts chromedriver, and has
Chromium (headless, --lang=en-US: the fallback encoding is windows-1252) load each case page in
turn with **JavaScript off** (the content setting a user turns off): a crawler runs no script,
so it is the user agent the HTML standard describes with scripting disabled — a
``<noscript>``'s content is markup, its links and refresh are there. Once the page is parsed,
DevTools' Runtime.evaluate (which runs while page scripts do not) reads its DOM: the document's
characterSet, baseURI and contentType, and every element that may be a link with its attribute
as written and as the browser resolved it (``a.href``, ``area.href``, ``iframe.src``,
``frame.src``, ``link.href``; an SVG ``<a>``'s href against ``document.baseURI``), and its rel.
A navigation away from the page (a refresh) is logged and answered 204 No Content, so the
page is still there to be read. The site's log adds the navigations the browser made from the
page (its Sec-Fetch-Dest header: ``document`` for a refresh, ``iframe``/``frame`` for frames),
waiting 2.5 s for a 1 s refresh.
URLs are recorded with the site's origin as ``{{ORIGIN}}``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minicrawl.demo.site import Request, Resource  # noqa: E402
from tests.linkcases import DATA, ORIGIN, CaseSite, cases  # noqa: E402

READ_DOM = r"""(() => {
  if (!location.pathname.endsWith('/page.html')) return null;
  const HTML = 'http://www.w3.org/1999/xhtml', SVG = 'http://www.w3.org/2000/svg',
        XLINK = 'http://www.w3.org/1999/xlink';
  const out = {url: document.URL, characterSet: document.characterSet,
               baseURI: document.baseURI, contentType: document.contentType, links: [],
               metas: []};
  for (const el of document.getElementsByTagName('*')) {
    const tag = el.localName, ns = el.namespaceURI;
    const add = (kind, attr, value, resolved) =>
      out.links.push({kind, attr, value, resolved, rel: el.getAttribute('rel')});
    if (ns === HTML && (tag === 'a' || tag === 'area' || tag === 'link')) {
      if (el.hasAttribute('href')) add(tag, 'href', el.getAttribute('href'), el.href);
    } else if (ns === HTML && (tag === 'iframe' || tag === 'frame')) {
      if (el.hasAttribute('src')) add(tag, 'src', el.getAttribute('src'), el.src);
    } else if (ns === SVG && tag === 'a') {
      const value = el.hasAttribute('href') ? el.getAttribute('href')
                                            : el.getAttributeNS(XLINK, 'href');
      if (value !== null) add('svg:a', 'href', value, new URL(value, document.baseURI).href);
    } else if (tag === 'a') {
      out.links.push({kind: 'other:a', ns, value: el.getAttribute('href')});
    } else if (ns === HTML && tag === 'meta') {
      out.metas.push({name: el.getAttribute('name'), httpEquiv: el.getAttribute('http-equiv'),
                      content: el.getAttribute('content')});
    }
  }
  return JSON.stringify(out);
})()"""


class StayingSite(CaseSite):
    """The case site, but a page's navigation elsewhere (a refresh: Sec-Fetch-Dest document)
    is answered 204 No Content: the request is logged, and the browser stays on the case page
    (a 204 ends a navigation where it is), to be read once parsed — no page script can read it
    at its DOMContentLoaded: JavaScript is off."""

    def resolve(self, request: Request) -> Resource:
        if request.headers.get("sec-fetch-dest") == "document" and request.path != "/" \
                and not request.path.endswith("/page.html"):
            return Resource(b"", 204)
        return super().resolve(request)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base: str, method: str, path: str, body: object = None) -> dict:
    request = urllib.request.Request(base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())["value"]


def main(names: list[str]) -> None:
    version = subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout
    kept = {}
    if names:
        if unknown := set(names) - set(cases()):
            sys.exit(f"no such case: {', '.join(sorted(unknown))}")
        kept = json.loads((DATA / "truth.json").read_text("utf-8"))
        if kept.get("_chromium") != version.strip():
            sys.exit(f"truth.json is of {kept.get('_chromium')}, this is {version.strip()}: "
                     "record every case")
    port = free_port()
    driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                call(base, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        # JavaScript off as a user turns it off (the content setting): the HTML parser's
        # scripting flag is then off, so a <noscript>'s content is markup — a crawler's view.
        # DevTools' Runtime.evaluate still runs (READ_DOM); no page script does.
        session = call(base, "POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "pageLoadStrategy": "none", "goog:chromeOptions": {
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--lang=en-US",
                         "--no-proxy-server", "--disable-features=HttpsUpgrades"],
                "prefs": {"profile.managed_default_content_settings.javascript": 2}}}}}
                       )["sessionId"]
        s = f"/session/{session}"

        def evaluate(expression: str) -> object:
            return call(base, "POST", s + "/goog/cdp/execute", {
                "cmd": "Runtime.evaluate",
                "params": {"expression": expression, "returnByValue": True}})["result"].get(
                    "value")

        recorded = {}
        with StayingSite() as site:
            for name, case in cases().items():
                if names and name not in names:
                    continue
                start = len(site.requests)
                call(base, "POST", s + "/url", {"url": site.url(case.path)})
                deadline = time.monotonic() + 10
                dom = None
                while dom is None and time.monotonic() < deadline:
                    # the case page parsed (its refresh's target is held: still this page)
                    if evaluate("document.readyState") in ("interactive", "complete"):
                        text = evaluate(READ_DOM)
                        dom = json.loads(text) if isinstance(text, str) else None
                    if dom is None:
                        time.sleep(0.05)
                deadline = time.monotonic() + (2.5 if case.category == "refresh" else 0.7)
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                requests = []
                for request in site.requests[start:]:
                    path = request.path
                    if path.startswith(f"/c/{name}/") and path != case.path or (
                            path == case.path and request is not site.requests[start]):
                        dest = request.headers.get("sec-fetch-dest", "")
                        requests.append([dest, ORIGIN + path])
                if dom is None:
                    sys.exit(f"{name}: its DOM could not be read")
                dom.pop("url", None)
                text = json.dumps(dom).replace(site.origin, ORIGIN)
                recorded[name] = {**json.loads(text), "requests": sorted(requests)}
                print(name, dom["characterSet"], len(dom["links"]), requests, flush=True)
        call(base, "DELETE", s)
    finally:
        driver.terminate()
        driver.wait(10)
    recorded = {**kept, "_chromium": version.strip(), **recorded}
    (DATA / "truth.json").write_text(json.dumps(recorded, indent=1, ensure_ascii=False,
                                                sort_keys=True) + "\n", "utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
