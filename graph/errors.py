"""The provider's failures, told apart from bugs in Companion's own code."""

from __future__ import annotations


class ProviderError(RuntimeError):
    """The model provider could not be reached or started."""
