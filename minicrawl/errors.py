"""Errors a crawl can end with, in a module of their own so that catching them (as the command
line does) does not import what raises them: redis-py and NumPy cost 20 MB and 100 ms."""


class RedisUnavailable(RuntimeError):
    """Redis could not be reached (or lost the crawl's data); the message says where and when."""


class VisitedMismatch(ValueError):
    """This process's Visited settings differ from those the shared crawl was started with."""
