"""Link extraction: minicrawl's lxml path against BeautifulSoup's tree on the same pages.

Run by hand: ``python bench/bench_extract.py``. Prints pages/s and links/s for each way and the
ratio, measured in the same run on the same bodies (demo-site pages and a large link-dense page).
"""

from __future__ import annotations

import time

from bs4 import BeautifulSoup

from minicrawl.links import decode_html, extract_links
from minicrawl.local.demo import generate_site

URL = "http://127.0.0.1:8000/section1/page1.html"


def with_bs4(body: bytes, url: str) -> list[str]:
    """The straightforward BeautifulSoup way (same charset handling, same tags)."""
    text, _ = decode_html(body)
    soup = BeautifulSoup(text, "lxml")
    hrefs = [a.get("href") for a in soup.find_all(["a", "area"], href=True)]
    hrefs += [f.get("src") for f in soup.find_all(["frame", "iframe"], src=True)]
    return list(dict.fromkeys(h.strip() for h in hrefs))


def with_minicrawl(body: bytes, url: str) -> list[str]:
    return extract_links(body, url).hrefs


def measure(fn, bodies: list[bytes], seconds: float = 2.0) -> tuple[float, float]:
    pages = links = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for body in bodies:
            links += len(fn(body, URL))
            pages += 1
    elapsed = time.perf_counter() - start
    return pages / elapsed, links / elapsed


def main() -> None:
    site = generate_site("http://127.0.0.1:8000", pages=300)
    small = [r.body for r in site.pages.values() if r.body.startswith(b"<!DOCTYPE")]
    nav = "".join(f'<li><a href="../topic{i}/index.html#s">Topic {i}</a></li>'
                  for i in range(300))
    text = "<p>some text here</p>" * 8000
    big = [f"<html><body><ul>{nav}</ul>{text}</body></html>".encode()]
    for name, bodies in (("demo pages (~1.5 KB, 13 links)", small),
                         ("link-dense page (~200 KB, 300 links)", big)):
        assert [with_bs4(b, URL) for b in bodies[:5]] == [with_minicrawl(b, URL)
                                                          for b in bodies[:5]]
        bs_pages, bs_links = measure(with_bs4, bodies)
        mc_pages, mc_links = measure(with_minicrawl, bodies)
        print(f"{name}:\n"
              f"  BeautifulSoup+lxml tree: {bs_pages:9.1f} pages/s {bs_links:11.0f} links/s"
              f"\n  minicrawl (lxml direct): {mc_pages:9.1f} pages/s {mc_links:11.0f} links/s"
              f"\n  ratio minicrawl/bs4:     {mc_pages / bs_pages:9.2f}x")


if __name__ == "__main__":
    main()
