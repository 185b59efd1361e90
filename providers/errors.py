"""The provider's own error: it could not be reached or started (not a bug of ours)."""

from __future__ import annotations


class ProviderError(RuntimeError):
    """The model provider could not be reached or started."""
