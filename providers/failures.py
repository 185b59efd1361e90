"""Classified provider failures: what went wrong on the provider's side, and what to say.

``is_provider_error`` tells a provider's failure (HTTP, connection, its process, its
configuration) from a bug in Companion's own code; ``provider_error_kind`` says what the
failure asks of the user; ``describe_provider_error`` gives its cause in one short line.
"""

from __future__ import annotations

from typing import Literal

import httpx

from config.settings import ConfigError
from providers.errors import ProviderError
from tools.net import Refused


def is_provider_error(exc: BaseException) -> bool:
    """True for a failure of the model provider (HTTP, connection, its process, its
    configuration); False for a bug in Companion's own code."""
    import openai

    provider_side = (
        openai.APIError | httpx.HTTPError | ConnectionError | ProviderError | ConfigError
    )
    return isinstance(exc, provider_side)


ErrorKind = Literal["key", "not_found", "refused", "setup", "transient"]


def provider_error_kind(exc: BaseException) -> ErrorKind:
    """What a failed model call asks of the user, by cause.

    ``key``: 401/403, the key was refused; ``not_found``: 404, a wrong URL or model name;
    ``refused``: any other 4xx, the request itself was refused (trying again won't help);
    ``setup``: Companion is not configured to answer (no chat model, no endpoint);
    ``transient``: 429, 5xx, timeouts, connection errors, a broken stream — try again.
    """
    import openai

    if isinstance(exc, ConfigError):
        return "setup"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return "key"
    if isinstance(exc, openai.NotFoundError):
        return "not_found"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return "refused" if 400 <= status < 500 and status not in (408, 409, 429) else "transient"
    return "transient"


def describe_provider_error(exc: BaseException) -> str:
    """A short, user-readable cause for a failed model call."""
    import openai

    if isinstance(exc, openai.RateLimitError):
        return "the provider is rate-limiting requests (HTTP 429)"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"the API key was refused (HTTP {exc.status_code})"
    if isinstance(exc, openai.NotFoundError):
        return "the model or endpoint was not found (HTTP 404)"
    if isinstance(exc, openai.APIStatusError):
        return f"the provider answered HTTP {exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):
        return "the provider timed out"
    refused = _refusal(exc)
    if refused is not None:
        return f"the endpoint was not contacted: {refused}"
    if isinstance(exc, openai.APIConnectionError):
        return "the provider could not be reached"
    if isinstance(exc, ProviderError | ConfigError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def _refusal(exc: BaseException) -> Refused | None:
    """The address guard's refusal behind a failed call (the OpenAI client and langchain
    wrap it in their connection errors), or None."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, Refused):
        cause = cause.__cause__
    return cause
