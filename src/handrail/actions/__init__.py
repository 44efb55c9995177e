"""Declarative HTTP tools from YAML ("action sets"): compile with ``CONFIG_*`` errors, resolve
dependencies and selections, prepare a request with its preview and expiry, and send it with
retries, idempotency keys and no redirects. See ``docs/reference/actions.md``.

    action_set = load_action_set("booking.yaml")
    tool = action_set.tool("book_slot")
    resolved = await resolve_dependencies(action_set, tool, args, client=client, cache=cache)
    prepared = prepare(action_set, tool, args, resolved=resolved)   # then: confirm, then
    result = await send(action_set, prepared, client=client)
"""

from .config import compile_action_set, load_action_set
from .dependencies import CacheEntry, forget_dependency, resolve_dependencies
from .model import (
    EFFECT_CLASSES,
    ActionAuth,
    ActionSet,
    ActionTool,
    Confirmation,
    Dependency,
    Effect,
    Recovery,
    Select,
    Transport,
)
from .prepare import (
    REDACTED,
    InvalidInput,
    PreparedRequest,
    PrepareError,
    check_input,
    digest,
    prepare,
)
from .problems import (
    CONFIG_ERROR_CODES,
    RUNTIME_CODES,
    ActionConfigError,
    ConfigCode,
    ConfigProblem,
    RuntimeCode,
)
from .results import ActionResult, Candidate, NeedsSelection, Resolved, ResultStatus
from .run import run_read_only
from .transport import call, may_retry, retry_delay_ms, send

__all__ = [
    "CONFIG_ERROR_CODES",
    "EFFECT_CLASSES",
    "REDACTED",
    "RUNTIME_CODES",
    "ActionAuth",
    "ActionConfigError",
    "ActionResult",
    "ActionSet",
    "ActionTool",
    "CacheEntry",
    "Candidate",
    "ConfigCode",
    "ConfigProblem",
    "Confirmation",
    "Dependency",
    "Effect",
    "InvalidInput",
    "NeedsSelection",
    "PrepareError",
    "PreparedRequest",
    "Recovery",
    "Resolved",
    "ResultStatus",
    "RuntimeCode",
    "Select",
    "Transport",
    "call",
    "check_input",
    "compile_action_set",
    "digest",
    "forget_dependency",
    "load_action_set",
    "may_retry",
    "prepare",
    "resolve_dependencies",
    "retry_delay_ms",
    "run_read_only",
    "send",
]
