"""Bloom filters, usable on their own: no crawler is imported (``visited`` reads the options).

What this wing adds to the model: around the core's Bloom filter (:mod:`minicrawl.core.visited`:
a URL's 8 bits at ``positions(url, m)``, m = ``bits_for(n, p)`` for the expected number of URLs
*n* and the error rate *p*, k = 8) — batches, a file, the expected and current false-positive
rates, the counting and scalable variants, an exact set, and two classic bad hash families
that ``minicrawl bloom measure`` (:mod:`minicrawl.cli.bloom`) compares the crawler's with.
Every filter here places and sizes as the core does; none has a hash family or a k of its own.

The one seam where the crawl uses it: :func:`minicrawl.bloom.visited.make_visited` builds a filter
from the options; the crawler only ever calls ``add_new`` on it (the core's ``SeenSet``: the
URLs of a batch not seen before), which ``add_many`` (one answer per URL) serves.

    >>> from minicrawl.bloom import BloomFilter
    >>> bf = BloomFilter(capacity=1_000_000, error_rate=0.001)
    >>> from minicrawl.bloom.sizing import optimal_bits, false_positive_rate

=================  ==============================================================
``sizing``         the formulas; :class:`FilterNumbers` every filter reports
``batch``          the core's positions for a batch, in NumPy, and the batch's bookkeeping
``filter``         :class:`BloomFilter`, its batch path and its file format
``counting``       :class:`CountingBloomFilter` (remove)
``scalable``       :class:`ScalableBloomFilter` (grows, keeps the rate under p)
``exact``          :class:`ExactVisited`, a ``set``; the kinds one process holds
``visited``        run.py's Visited: every kind, the one the options ask for, its stats
``hashes``         the teaching hash families of ``minicrawl bloom measure`` (not the crawl's)
=================  ==============================================================
"""

from minicrawl.bloom.counting import CountingBloomFilter
from minicrawl.bloom.filter import BloomFileError, BloomFilter
from minicrawl.bloom.scalable import ScalableBloomFilter
from minicrawl.bloom.sizing import FilterNumbers

__all__ = ["BloomFileError", "BloomFilter", "CountingBloomFilter", "FilterNumbers",
           "ScalableBloomFilter"]
