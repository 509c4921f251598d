"""Servers on loopback for the demo, the tests and the benchmarks: no crawl needs them.

====================  ==============================================================
``site``              :class:`LocalSite`: an HTTP server on 127.0.0.1 serving pages from a
                      dict, with a request log and fault injection
``demo``              the generated demo site (``--demo``) with its own breadth-first oracle
``redis_server``      a throwaway ``redis-server`` (or cluster) on a free port, for tests
====================  ==============================================================

Nothing in the crawl imports this wing; the command line does, for ``--demo`` only.
"""
