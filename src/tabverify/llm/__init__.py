"""Language models over the OpenAI-compatible chat-completion wire protocol (docs/llm.md):
:class:`LlmConfig` says where the server is, :class:`ChatClient` sends requests (retries, bounded
replies, one-line :class:`ChatError` failures)."""

from __future__ import annotations

from tabverify.llm.client import (
    DEFAULT_API_KEY_ENV,
    ERROR_KINDS,
    MAX_RESPONSE_BYTES,
    ChatClient,
    ChatError,
    ChatReply,
    LlmConfig,
    parse_completion,
)

__all__ = [
    "ChatClient",
    "ChatError",
    "ChatReply",
    "LlmConfig",
    "parse_completion",
    "DEFAULT_API_KEY_ENV",
    "ERROR_KINDS",
    "MAX_RESPONSE_BYTES",
]
