"""Sitemaps (``--sitemaps``): the URLs a site lists for crawlers, as seeds of depth 0.

What this wing adds to the model: more seeds. Before the workers start, each seed host's
sitemaps (its robots.txt ``Sitemap:`` lines, else ``/sitemap.xml``; indexes followed, gzip read)
are fetched through the crawl's fetcher and politeness, and each in-scope ``<loc>`` is offered to
Visited and, if new, put in ToDo at depth 0 — like a seed. With ``--state --recrawl`` a page whose
``<lastmod>`` is not newer than its recorded fetch is recorded unchanged without a request.

====================  ==============================================================
``reader``            :class:`SitemapReader`: where the files are, fetching them, indexes
``parse``             one file: gzip, the sitemaps.org limits, XML bombs, ``<lastmod>``
====================  ==============================================================

The one seam where the crawl uses it: ``Crawler._put_sitemap_urls`` (before the workers, so the
termination rule is unchanged) and, in the worker, ``CrawlHooks._sitemap_unchanged``
(:mod:`minicrawl.visit.hooks`).
"""
