"""minicrawl's version (in a module of its own: anything may import it without the package)."""

__version__ = "0.1.0"
