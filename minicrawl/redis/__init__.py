"""The shared crawl (``--redis URL --crawl NAME``): many processes, one ToDo and one Visited.

What it adds to the model: ToDo and Visited move into Redis, so ``run.py`` processes on
one or many machines crawl one site together — Visited is the same Bloom filter as
:class:`minicrawl.visited.BloomFilter` with its bits in Redis bitmaps (test-and-set in one Lua
script per shard), ToDo a Redis stream whose entries a killed process leaves to be reclaimed,
and the stats and each host's pace are shared too.

====================  ==============================================================
``conn``              the connection: retries, replay tokens, cluster slots
``todo``              :class:`RedisToDo`: ToDo as a stream and a consumer group
``visited``           :class:`RedisBloomVisited`: sharded Bloom bitmaps
``stats``             :class:`RedisStats`: the crawl's counters
``gate``              :class:`RedisHostGate`: one pace per host across processes
``caps``              :class:`RedisPageCap`: ``--max-pages`` counted for all processes
``chains``            :class:`RedisChains`: redirect chains waiting at their targets
``crawl``             :func:`open_shared_crawl` builds the parts; ``--status``
====================  ==============================================================

The one seam where the crawl uses it: :func:`minicrawl.redis.crawl.open_shared_crawl` hands
the crawler its ``todo`` (a ``PoliteFrontier``, :mod:`minicrawl.seams`), ``visited`` (a core
``SeenSet``), ``stats``, host gate (a ``HostPace``), page cap (a ``PageCap``) and redirect chains
(``Redirects``); run.py's worker loop (:mod:`minicrawl.visit.hooks`) does not know which
ToDo, Visited or pace it has.

``import redis`` here is redis-py, the PyPI package: imports are absolute, so this package's name
(``minicrawl.redis``) never hides it.
"""
