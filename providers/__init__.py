"""Model hosting: the chat models Companion talks to, and the embedded model's server.

The face of the package (``__all__``); the rest of Companion imports from here, never
from the modules behind it (``tests/unit/test_layers.py``), except the install-time smoke
test, run as ``python -m providers.local_smoke``. ``chat`` makes the models (an
OpenAI-compatible endpoint or the bundled llama.cpp model), ``failures`` classifies what
went wrong on the provider's side, ``verify`` checks an endpoint for the Settings tab,
``llama_server`` supervises the bundled model's server, ``discovery`` finds a model server
already running on this machine, and ``embeddings`` turns texts into vectors for recall.
Imports config and tools.net.
"""

from providers.chat import (
    LOCAL_MAX_TOKENS,
    PLACEHOLDER_KEY,
    lazy_local_model,
    make_chat_model,
    make_vision_model,
    unchosen_model,
)
from providers.discovery import FoundServer, LocalServers, find_local_servers, local_servers
from providers.embeddings import Embedder, EmbeddingUnavailable, open_embedder
from providers.errors import ProviderError
from providers.failures import (
    ErrorKind,
    describe_provider_error,
    is_provider_error,
    provider_error_kind,
)
from providers.llama_server import LocalServer, local_model_path, local_server
from providers.verify import Verified, endpoint_status, verify_endpoint

__all__ = [
    "LOCAL_MAX_TOKENS",
    "PLACEHOLDER_KEY",
    "Embedder",
    "EmbeddingUnavailable",
    "ErrorKind",
    "FoundServer",
    "LocalServer",
    "LocalServers",
    "ProviderError",
    "Verified",
    "describe_provider_error",
    "endpoint_status",
    "find_local_servers",
    "is_provider_error",
    "lazy_local_model",
    "local_model_path",
    "local_server",
    "local_servers",
    "make_chat_model",
    "make_vision_model",
    "open_embedder",
    "provider_error_kind",
    "unchosen_model",
    "verify_endpoint",
]
