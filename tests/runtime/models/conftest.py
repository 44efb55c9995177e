"""Shared setup for the model adapter tests: SDK clients whose HTTP goes to a handler.

No test reaches the network. Each adapter test builds the provider's official SDK client with an
``httpx2.AsyncClient`` over ``httpx2.MockTransport`` (the HTTP client the SDKs use), so the
request body the SDK sends and the streamed body it parses are the providers' documented wire
formats. Retries are off so that 429 and 500 answers come back at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anthropic
import httpx2
import openai
import pytest
from _model_wire import API_KEY, Handler


@pytest.fixture
async def http_client() -> AsyncIterator[Callable[[Handler], httpx2.AsyncClient]]:
    """A factory of HTTP clients over a MockTransport; each is closed after the test."""
    clients: list[httpx2.AsyncClient] = []

    def make(handler: Handler) -> httpx2.AsyncClient:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
def openai_client(
    http_client: Callable[[Handler], httpx2.AsyncClient],
) -> Callable[[Handler], openai.AsyncOpenAI]:
    def make(handler: Handler) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=API_KEY,
            base_url="https://llm.test/v1",
            http_client=http_client(handler),
            max_retries=0,
        )

    return make


@pytest.fixture
def anthropic_client(
    http_client: Callable[[Handler], httpx2.AsyncClient],
) -> Callable[[Handler], anthropic.AsyncAnthropic]:
    def make(handler: Handler) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=API_KEY,
            base_url="https://claude.test",
            http_client=http_client(handler),
            max_retries=0,
        )

    return make
