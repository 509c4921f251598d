"""Politeness: may this URL be fetched now? Its own part, asked by the ToDo and the worker.

* :mod:`~minicrawl.politeness.hosts`: each host READY, RESTING or BUSY, and the request slots on
  it, held by ToDo items: one process's pace (a ``HostPace``, :mod:`minicrawl.seams`: the
  core's ``Pace`` and more);
* :mod:`~minicrawl.politeness.todo`: the polite ToDo (a ``PoliteFrontier``), a line per host,
  which hands a URL out only when the pace says its host is READY;
* :mod:`~minicrawl.politeness.robots`: robots.txt (RFC 9309) and the question each worker asks
  before a request: GO, WAIT or DENY.

In a shared crawl the pace is :class:`minicrawl.shared.gate.RedisHostGate` instead of ``Hosts``.
"""
