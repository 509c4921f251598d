"""Bloom filters, usable on their own: no crawler is imported (``visited`` reads the options).

What this wing adds to the model: the Visited set as m bits however long the URLs are — sized
from the expected number of URLs *n* and the error rate *p* (m = −n·ln p / (ln 2)²,
k = (m/n)·ln 2), reporting its expected and current false-positive rate — plus the counting
and scalable variants, the hash families, and the ``minicrawl bloom`` command that measures them.

The one seam where the crawl uses it: :func:`minicrawl.bloom.visited.make_visited` builds a filter
from the options; the crawler only ever calls ``add_new`` on it (the core's ``SeenSet``: the
URLs of a batch not seen before), which ``add_many`` (one answer per URL) serves.

    >>> from minicrawl.bloom import BloomFilter
    >>> bf = BloomFilter(capacity=1_000_000, error_rate=0.001)
    >>> from minicrawl.bloom.sizing import optimal_bits, false_positive_rate

=================  ==============================================================
``sizing``         the formulas; :class:`FilterNumbers` every filter reports
``hashes``         the eight seeded string hashes, and two teaching families
``filter``         :class:`BloomFilter`, its batch path and its file format
``batch``          the NumPy side of large batches
``counting``       :class:`CountingBloomFilter` (remove)
``scalable``       :class:`ScalableBloomFilter` (grows, keeps the rate under p)
``visited``        run.py's Visited: the filter the options ask for, or an exact set
``cli``            ``minicrawl bloom size|table|plot|measure``
=================  ==============================================================
"""

from minicrawl.bloom.counting import CountingBloomFilter
from minicrawl.bloom.filter import BloomFileError, BloomFilter
from minicrawl.bloom.scalable import ScalableBloomFilter
from minicrawl.bloom.sizing import FilterNumbers

__all__ = ["BloomFileError", "BloomFilter", "CountingBloomFilter", "FilterNumbers",
           "ScalableBloomFilter"]
