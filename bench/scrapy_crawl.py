"""The Scrapy peer: a CrawlSpider that follows every same-site link, nothing else.

Run by ``run.py`` with the Python of the Scrapy venv (Scrapy is not a dependency of minicrawl):

    VENV/bin/python bench/scrapy_crawl.py http://127.0.0.1:PORT/ --concurrency 16

Settings are the fair ones for a crawler race on one local host: the same number of concurrent
requests as minicrawl's threads (all to the one host), no download delay, no autothrottle, no
robots.txt, no HTTP cache, no size cap that the 2 MB pages could hit, errors-only logging.
Nothing is stored: the spider has no callback, it only follows links.
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class SiteSpider(CrawlSpider):
    """Follows every link to the start URLs' hosts."""

    name = "bench"

    def __init__(self, start: list[str], **kwargs: Any) -> None:
        self.start_urls = start
        self.allowed_domains = sorted({urlsplit(url).hostname or "" for url in start})
        # Set before CrawlSpider.__init__, which compiles the rules. Scope is left to
        # allowed_domains (the offsite filter compares hostnames): LinkExtractor's own
        # allow_domains compares host:port and so drops every link of a site on a port.
        self.rules = (Rule(LinkExtractor(), follow=True),)
        super().__init__(**kwargs)


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("url", nargs="+", help="start URLs: their hosts are the ones followed")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--per-domain", type=int, default=0,
                    help="CONCURRENT_REQUESTS_PER_DOMAIN (default: --concurrency)")
    args = ap.parse_args()
    settings = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_domain or args.concurrency,
        "CONCURRENT_REQUESTS_PER_IP": 0,  # 0: the per-domain limit applies
        "DOWNLOAD_DELAY": 0,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "HTTPCACHE_ENABLED": False,
        "DOWNLOAD_MAXSIZE": 1 << 30,
        "DOWNLOAD_WARNSIZE": 0,
        "DEPTH_LIMIT": 0,
        "RETRY_ENABLED": False,  # a retry would be a second fetch; none is needed on loopback
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "USER_AGENT": "scrapy-bench",
    }
    process = CrawlerProcess(settings)
    process.crawl(SiteSpider, start=list(args.url))
    process.start()


if __name__ == "__main__":
    main()
