"""Calls of HTTP action tools: read-only ones run; side effects are prepared, held for the
person's confirmation of that exact request, and sent once, before they expire.

The gates are pending asks like any other: a selection (a ``choice`` with ``origin:
"selection"``) when a dependency has several candidates, and a confirmation (a ``confirm`` with
``origin: "confirmation"``, ``preview`` and ``expiresAt``). The prepared request lives in the
store's ``confirmations`` table; confirming consumes it with a compare-and-set before anything
is sent, so a repeated or concurrent confirm sends nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from ..actions import (
    ActionResult,
    ActionSet,
    ActionTool,
    InvalidInput,
    NeedsSelection,
    PreparedRequest,
    PrepareError,
    digest,
    forget_dependency,
    prepare,
    resolve_dependencies,
    run_read_only,
    send,
)
from ..asks import PendingAsk
from ..store import ConfirmationConflict, Store
from .gate import uncertain_confirmation
from .gates import CONFIRMATIONS, SELECTIONS
from .messages import ToolCall

log = logging.getLogger("handrail.runtime")

#: How long past its transport budget a consumed confirmation may stay without an outcome
#: before it counts as uncertain.
LEASE_MARGIN_MS: Final = 30_000


@dataclass(frozen=True, kw_only=True)
class ActionBinding:
    """An agent's tool that is an HTTP action."""

    action_set: ActionSet
    tool: ActionTool


@dataclass(frozen=True, kw_only=True)
class ActionStep:
    """What a call of an action came to: a result for the model now (`result`, `is_error`),
    or a gate to pause on (`gate`)."""

    result: Any = None
    is_error: bool = False
    gate: PendingAsk | None = None


def sensitive_fields(action_set: ActionSet, tool_name: str) -> set[str]:
    """Fields that a dependency on `tool_name` marks sensitive: left out of that tool's results
    whenever the model or a client sees them."""
    names: set[str] = set()
    for tool in action_set.tools.values():
        for dependency in tool.dependencies.values():
            if dependency.tool == tool_name and dependency.select is not None:
                for path in dependency.select.sensitive:
                    last = path[-1] if path else None
                    if isinstance(last, str):
                        names.add(last)
    return names


def redact(value: Any, names: set[str]) -> Any:
    """`value` without the keys in `names`, at any depth."""
    if not names:
        return value
    if isinstance(value, dict):
        return {k: redact(v, names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [redact(v, names) for v in value]
    return value


def lease_ms(tool: ActionTool) -> int:
    """The longest a send of `tool` can take with its retries, plus a margin."""
    transport = tool.transport
    total = transport.timeout_ms * transport.retry_attempts
    delay = float(transport.backoff_ms)
    for _ in range(max(transport.retry_attempts - 1, 0)):
        total += int(delay * 2)  # with jitter
        delay *= transport.multiplier
    return total + LEASE_MARGIN_MS


class ActionCalls:
    """Runs the action tools of every agent over one store and one HTTP client."""

    def __init__(self, store: Store, *, client: httpx.AsyncClient | None = None) -> None:
        self.store = store
        self.client = client or httpx.AsyncClient(follow_redirects=False)
        self._owns_client = client is None
        self.cache: MutableMapping[str, Any] = {}

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ

    def secrets_of(self, action_set: ActionSet) -> Mapping[str, str]:
        """Where `action_set`'s secrets are read: a saved connection's own, else the
        environment (a configuration file's action sets)."""
        return action_set.secrets if action_set.secrets is not None else self.env

    async def call(
        self,
        binding: ActionBinding,
        call: ToolCall,
        *,
        history_id: str,
        user_id: str,
        choices: Mapping[str, str] | None = None,
    ) -> ActionStep:
        """Run a read-only action, or take a side effect as far as its next gate."""
        action_set, tool = binding.action_set, binding.tool
        if not tool.needs_confirmation:
            outcome = await run_read_only(
                action_set,
                tool,
                call.arguments,
                client=self.client,
                env=self.secrets_of(action_set),
                cache=self.cache,
            )
            if isinstance(outcome, NeedsSelection):
                return ActionStep(result=outcome.to_tool_result(), is_error=True)
            return self._result(binding, outcome)
        resolved = await resolve_dependencies(
            action_set,
            tool,
            call.arguments,
            client=self.client,
            env=self.secrets_of(action_set),
            cache=self.cache,
            choices=choices,
        )
        if isinstance(resolved, ActionResult):
            return self._result(binding, resolved)
        if isinstance(resolved, NeedsSelection):
            return ActionStep(gate=SELECTIONS.ask(binding, call, resolved, choices or {}))
        try:
            prepared = prepare(action_set, tool, call.arguments, resolved=resolved)
        except InvalidInput as exc:
            return ActionStep(result={"status": "needs_input", "message": str(exc)}, is_error=True)
        except PrepareError as exc:
            return ActionStep(result={"status": "error", "message": str(exc)}, is_error=True)
        bound = self._digest(binding, prepared, call, history_id=history_id, user_id=user_id)
        record = await self.store.confirmations.create(
            history_id=history_id,
            user_id=user_id,
            connection_id=action_set.id,
            tool_name=tool.name,
            tool_call_id=call.id,
            request=prepared.to_json(),
            digest=bound,
            preview=dict(prepared.preview),
            expires_at=prepared.expires_at,
        )
        return ActionStep(gate=CONFIRMATIONS.ask(binding, call, prepared, record.id))

    async def confirm(
        self,
        binding: ActionBinding,
        call: ToolCall,
        pending: PendingAsk,
        *,
        history_id: str,
        user_id: str,
    ) -> ActionStep:
        """Consume the confirmation with a compare-and-set, then send its request once."""
        confirmation_id = str(pending.confirmation_id)
        record = await self.store.confirmations.get(confirmation_id)
        if record is None:
            return _stale("The prepared request is gone. Call the tool again.")
        prepared = PreparedRequest.from_json(record.request)
        expected = self._digest(binding, prepared, call, history_id=history_id, user_id=user_id)
        try:
            await self.store.confirmations.consume(
                confirmation_id, digest=expected, lease_ms=lease_ms(binding.tool)
            )
        except ConfirmationConflict as exc:
            if exc.reason in ("expired", "digest") and exc.state == "pending":
                await self.store.confirmations.mark_stale(confirmation_id, reason=exc.reason)
            return _stale(_stale_text(exc.reason))
        try:
            result = await send(
                binding.action_set,
                prepared,
                client=self.client,
                env=self.secrets_of(binding.action_set),
            )
        except Exception:
            # A fault of the sending itself (not an answer of the API, which `send` reports):
            # the request may or may not have gone out, so it is ``uncertain``, never resent,
            # and the turn goes on with that instead of failing with the ask still shown.
            log.exception("%s: sending the confirmed request failed; it is not resent", call.name)
            await self.store.confirmations.abandon(confirmation_id)
            why = "sending it failed on the server"
            return ActionStep(result=uncertain_confirmation(confirmation_id, why), is_error=True)
        await self.store.confirmations.finish(
            confirmation_id,
            state="succeeded" if result.ok else "failed",
            outcome=result.to_json(),
        )
        recovery = binding.tool.recovery
        if recovery is not None and result.http_status in recovery.statuses:
            forget_dependency(self.cache, binding.action_set, binding.tool, recovery.dependency)
            log.info(
                "%s answered %s: refreshing %s", call.name, result.http_status, recovery.dependency
            )
            again = await self.call(binding, call, history_id=history_id, user_id=user_id)
            if again.gate is not None:
                return again
            # No new selection or confirmation (the model's choice is no longer offered, or
            # the refresh failed): the model gets the refusal with what the refresh found,
            # such as the options left, never approved on its own.
            refused = self._result(binding, result)
            return ActionStep(result={**refused.result, "refreshed": again.result}, is_error=True)
        return self._result(binding, result)

    async def cancel(self, pending: PendingAsk, reason: str) -> None:
        """The person did not confirm: the prepared request is never sent."""
        confirmation_id = pending.confirmation_id
        if not confirmation_id:
            return
        with contextlib.suppress(ConfirmationConflict):
            await self.store.confirmations.cancel(str(confirmation_id), reason)

    async def expire(self, pending: PendingAsk) -> None:
        """Mark an expired confirmation stale: it can never be sent."""
        confirmation_id = pending.confirmation_id
        if not confirmation_id:
            return
        with contextlib.suppress(ConfirmationConflict):
            await self.store.confirmations.mark_stale(str(confirmation_id), reason="expired")

    def _result(self, binding: ActionBinding, result: ActionResult) -> ActionStep:
        from .tools import storable_result  # (kept inside while the module's imports settle)

        hidden = sensitive_fields(binding.action_set, binding.tool.name)
        # The API's text is made storable; a result that had to change says so in ``note``.
        shown = storable_result(redact(result.to_tool_result(), hidden), as_field=True)
        return ActionStep(result=shown, is_error=not result.ok)

    def _digest(
        self,
        binding: ActionBinding,
        prepared: PreparedRequest,
        call: ToolCall,
        *,
        history_id: str,
        user_id: str,
    ) -> str:
        return digest(
            prepared,
            history_id=history_id,
            user_id=user_id,
            tool=binding.tool.name,
            arguments=call.arguments,
            dependency_values={},
            fingerprint=binding.action_set.fingerprint(binding.tool),
        )


def _stale(message: str) -> ActionStep:
    return ActionStep(
        result={"status": "error", "code": "CONFIRMATION_STALE", "message": message},
        is_error=True,
    )


def _stale_text(reason: str | None) -> str:
    if reason == "expired":
        return (
            "The confirmation expired before it was confirmed; nothing was sent. "
            "Prepare the call again."
        )
    if reason == "digest":
        return (
            "The request or its context changed since it was prepared; nothing was sent. "
            "Prepare the call again."
        )
    return (
        "The confirmation is no longer pending (already confirmed or cancelled); "
        "nothing more was sent."
    )
