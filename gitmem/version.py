"""The package version, in a module that imports nothing.

Kept out of ``gitmem/__init__.py``: that module re-exports the facade, so a low module
(the cache file header) reading the version from it would import the top of the house.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
"""The release, as in ``pyproject.toml``; part of every cache file header."""
