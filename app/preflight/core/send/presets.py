"""Provider presets: the base URL, API style and a sensible model for well-known
OpenAI-compatible endpoints, so adding one is a choice rather than a search.

Each preset knows its model's context window (``context_tokens``) as the provider
documents it: 128,000 tokens for gpt-4o-mini (OpenAI's and Azure's model pages) and for
Mistral Small (Mistral's model card), 1,048,576 input tokens for gemini-2.0-flash (Google's
model page), 32,768 for Qwen2.5-7B-Instruct (its config's ``max_position_embeddings``). A
local server's window is what it was started with: llama-server's and Ollama's defaults
(4,096) are used, and the note says where to change it.

Every preset is an ordinary :class:`ProviderSettings` once chosen; the user can edit any
field. ``placeholder`` marks the part of the URL the user must replace (Azure's resource
name), which "Test connection" and saving refuse while it is still there.
"""

from __future__ import annotations

from dataclasses import dataclass

from preflight.core.config import CONTEXT_TOKENS_DEFAULT, ProviderSettings


@dataclass(frozen=True)
class ProviderPreset:
    key: str              # short name, also the provider's default name
    label: str            # shown in the menu
    base_url: str
    model: str
    api_style: str = "chat"
    placeholder: str = ""  # text in base_url the user must replace
    note: str = ""         # one line shown after choosing it
    context_tokens: int = CONTEXT_TOKENS_DEFAULT   # the model's documented window

    def settings(self, name: str | None = None) -> ProviderSettings:
        return ProviderSettings(name=name or self.key, base_url=self.base_url,
                                model=self.model, api_style=self.api_style,
                                context_tokens=self.context_tokens)


PRESETS: tuple[ProviderPreset, ...] = (
    ProviderPreset("openai", "OpenAI", "https://api.openai.com/v1", "gpt-4o-mini",
                   context_tokens=128_000),
    ProviderPreset("azure", "Azure OpenAI", "https://YOUR-RESOURCE.openai.azure.com/openai/v1",
                   "gpt-4o-mini", placeholder="YOUR-RESOURCE",
                   note="Replace YOUR-RESOURCE with your Azure resource name; the model is "
                        "your deployment's name.", context_tokens=128_000),
    ProviderPreset("mistral", "Mistral", "https://api.mistral.ai/v1", "mistral-small-latest",
                   context_tokens=128_000),
    ProviderPreset("gemini", "Google Gemini (OpenAI-compatible endpoint)",
                   "https://generativelanguage.googleapis.com/v1beta/openai",
                   "gemini-2.0-flash", context_tokens=1_048_576),
    ProviderPreset("llama-cpp", "Local llama.cpp server", "http://127.0.0.1:8080/v1", "local",
                   note="llama-server serves the one model it was started with; no key "
                        "needed. Its context window is its -c value (4,096 assumed).",
                   context_tokens=4096),
    ProviderPreset("vllm", "Local vLLM server", "http://127.0.0.1:8000/v1",
                   "Qwen/Qwen2.5-7B-Instruct",
                   note="Use the model name vLLM was started with (Test connection lists "
                        "it).", context_tokens=32_768),
    ProviderPreset("ollama", "Local Ollama", "http://127.0.0.1:11434/v1", "llama3.2",
                   note="Use a model you pulled (ollama list); no key needed. Its context "
                        "window is the model's num_ctx (Ollama's default 4,096 assumed).",
                   context_tokens=4096),
)


def preset(key: str) -> ProviderPreset:
    for p in PRESETS:
        if p.key == key:
            return p
    raise KeyError(key)


def unfilled_placeholder(base_url: str) -> str | None:
    """The preset placeholder still in ``base_url`` (e.g. Azure's YOUR-RESOURCE), if any."""
    for p in PRESETS:
        if p.placeholder and p.placeholder.lower() in base_url.lower():
            return p.placeholder
    return None
