"""Preflight: sanitize a document before a cloud LLM sees it."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("preflight")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
