"""Who serves OpenAI's APIs, and where their clients put credentials (sans I/O): OpenAI,
Azure OpenAI / AI Foundry and the OpenAI-compatible providers (providers/wirespec.Provider;
the APIs' tables and streams are openai_chat, openai_responses, legacy, batch and
openai_realtime)."""

from __future__ import annotations

from .wirespec import Provider

# OpenAI: a key in Authorization (ChatGPT's backend: a cookie); a browser's Realtime
# WebSocket carries it as a subprotocol (`realtime, openai-insecure-api-key.<key>`).
OPENAI = Provider(
    "openai", hosts=("api.openai.com", "chatgpt.com"),
    headers=frozenset({"authorization", "openai-api-key", "cookie"}),
    subprotocols=("openai-insecure-api-key.",),
)  # fmt: skip
# Azure OpenAI and Azure AI Foundry: `{resource}.openai.azure.com`,
# `{resource}.cognitiveservices.azure.com`, `{resource}.services.ai.azure.com` (the
# deployments, `/openai/v1/...`, Assistants `/openai/threads`, `/openai/assistants`); the
# key in api-key (an API Management gateway: ocp-apim-subscription-key), an Entra token
# in Authorization; a Realtime WebSocket from a browser: `?api-key=`.
AZURE = Provider(
    "azure", hosts=("openai.azure.com", "cognitiveservices.azure.com", "services.ai.azure.com"),
    headers=frozenset({"api-key", "authorization", "ocp-apim-subscription-key"}),
    params=frozenset({"api-key"}),
)  # fmt: skip
# The other providers of OpenAI-compatible (and Cohere's) APIs: a key in Authorization.
COMPATIBLE = Provider(
    "openai-compatible",
    hosts=("openrouter.ai", "api.deepseek.com", "api.mistral.ai", "api.groq.com", "api.together.xyz",
           "api.fireworks.ai", "api.x.ai", "api.cohere.com", "api.cohere.ai", "api.perplexity.ai"),
    headers=frozenset({"authorization"}),
)  # fmt: skip
