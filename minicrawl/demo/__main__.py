"""``python -m minicrawl.demo``: serve the demo site on loopback until killed (its URL first)."""

from minicrawl.demo import serve

try:
    serve()
except KeyboardInterrupt:
    pass
