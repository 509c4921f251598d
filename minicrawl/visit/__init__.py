"""run.py's hooks on the core's trip (:class:`minicrawl.visit.trip.CrawlHooks`): robots.txt, the
host's turn and the page cap before the fetch, retries and redirect chains
(:mod:`minicrawl.visit.redirects`) through ToDo after it, the page recorded before its new links
enter ToDo."""
