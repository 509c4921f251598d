"""One page's visit, run.py's: its hooks on the core's trip (fetch → page → links → door).

=============  ===============================================================================
``hooks``      :class:`~minicrawl.visit.hooks.CrawlHooks`: robots.txt, the host's turn and the
               page cap before the fetch; retries and redirect chains through ToDo after it;
               unchanged and duplicate pages; the page recorded before its new links enter ToDo
``robots``     :class:`~minicrawl.visit.robots.RobotsGate`: robots.txt (RFC 9309) and the
               question asked before each request: GO, WAIT or DENY
``robotstxt``  :func:`~minicrawl.visit.robotstxt.parse_robots`: one robots.txt read as RFC 9309
               says for our product token (Google's reference tests pass through it)
``retry``      which failed fetches deserve another attempt, and how long to wait before it
``redirects``  redirect chains: the target through the door like a link, one record per chain
=============  ===============================================================================

The core's trip is :mod:`minicrawl.core.trip`; the fetch, :mod:`minicrawl.http`.
"""
