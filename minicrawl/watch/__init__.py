"""Watching a crawl: the live view, the decision trace and the HTML report.

What this wing adds to the model: nothing the crawl depends on — it only shows what the crawl
does. Each part reads the crawl or hears it, never steers it:

====================  ==============================================================
``progress``          one reading of the crawl's gauges (ToDo, pages, Visited's fill)
``view``              the live panel on a terminal (``rich``), from those readings
``summary``           the summary at the end: what went wrong first (what a page, an error
                      and a problem are), or every statistic (``--verbose``)
``trace``             ``--trace``: one line per decision of the model
``report``            ``--report``: sampled gauges and per-page numbers, drawn to HTML
====================  ==============================================================

The one seam where the crawl uses it: the tracer and the report's recorder are observers
(:mod:`minicrawl.events`) the crawler adds when asked for, and the summary's first problems one
it always adds; the live view reads the crawler from the command line's thread.
"""
