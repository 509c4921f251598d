"""run.py's visit: what a worker does with one ToDo item, plugged into the core's worker loop
as its ``Visitor`` (:class:`minicrawl.visit.trip.CrawlTrip`): politeness asked, one fetch,
retries and redirect chains (:mod:`minicrawl.visit.redirects`) through ToDo, the page recorded
and its new links put in ToDo."""
