"""Visited, run.py's: every kind of set of the URLs a crawl has seen, and the one the options ask
for. Usable on their own: no crawler is imported (``make`` reads the options).

Around the core's Bloom filter (:mod:`minicrawl.core.visited`: a URL's 8 bits at
``positions(url, m)``, m = ``bits_for(n, p)`` for the expected number of URLs *n* and the error
rate *p*, k = 8) — batches, a file, the expected and current false-positive rates, the counting
and scalable variants, an exact set, a recrawl's Visited that forgets gone pages, and two classic
bad hash families that ``minicrawl bloom measure`` (:mod:`minicrawl.cli.bloom`) compares the
crawler's with. Every filter here places and sizes as the core does; none has a hash family or a
k of its own.

The one seam where the crawl uses it: :func:`minicrawl.visited.make.make_visited` builds one
from the options; the crawler only ever calls ``add_new`` on it (the core's ``SeenSet``: the
URLs of a batch not seen before), which ``add_many`` (one answer per URL) serves. The shared
crawl's Visited, with its bits in Redis, is :class:`minicrawl.redis.visited.RedisBloomVisited`.

    >>> from minicrawl.visited import BloomFilter
    >>> bf = BloomFilter(capacity=1_000_000, error_rate=0.001)
    >>> from minicrawl.visited.sizing import optimal_bits, false_positive_rate

=================  ==============================================================
``sizing``         the formulas; :class:`FilterNumbers` every filter reports
``batch``          the core's positions for a batch, in NumPy, and the batch's bookkeeping
``bloom``          :class:`BloomFilter`, its batch path and its file format
``counting``       :class:`CountingBloomFilter` (remove)
``scalable``       :class:`ScalableBloomFilter` (grows, keeps the rate under p)
``exact``          :class:`ExactVisited`, a ``set``; the kinds one process holds
``forgetting``     :class:`ForgettingVisited`: a recrawl's (``--forget-gone``), which forgets
                   the pages found gone
``make``           run.py's Visited: every kind, the one the options ask for, its stats
``hashes``         the teaching hash families of ``minicrawl bloom measure`` (not the crawl's)
=================  ==============================================================
"""

from minicrawl.visited.bloom import BloomFileError, BloomFilter
from minicrawl.visited.counting import CountingBloomFilter
from minicrawl.visited.scalable import ScalableBloomFilter
from minicrawl.visited.sizing import FilterNumbers

__all__ = ["BloomFileError", "BloomFilter", "CountingBloomFilter", "FilterNumbers",
           "ScalableBloomFilter"]
