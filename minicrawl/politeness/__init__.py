"""Politeness: robots.txt (:mod:`~minicrawl.politeness.robots`, RFC 9309) and the question each
worker asks before a request: GO, WAIT or DENY. The hosts' pace and the polite ToDo are in
:mod:`minicrawl.frontier`."""
