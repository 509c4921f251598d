"""Speed: what the model does not need, kept because it pays (measured: ``bench/README.md``).

Each piece is beside the model, not in it: take it away and the crawl does the same, slower or
bigger.

=============  ===============================================================================
``workers``    the worker threads, and how many work at once, from the CPU time used
               (Java API docs, 16 threads: 12 % less memory, 8 % less time than all at once)
``memo``       the link resolver's memories, bounded by a share of Visited's URLs (Java API
               docs, 16 threads: without them the crawl takes about 1.4× the time)
=============  ===============================================================================
"""
