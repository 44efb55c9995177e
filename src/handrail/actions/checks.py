"""The checks that relate the parts of an action set: duplicate tools, effect and method,
confirmation, references, previews, dependencies and their cycles, recovery.

`check_tools` runs them over the tool drafts of `handrail.actions.config` and returns the
compiled tools (an empty mapping when any problem was found).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .drafts import (
    REQUEST_PLACES,
    DependencyDraft,
    Problems,
    RefSite,
    ToolDraft,
    build_dependency,
)
from .inputs import property_schema
from .model import ActionTool, Confirmation, Dependency
from .problems import join_path
from .refs import covers_path


def check_tools(
    p: Problems, drafts: list[ToolDraft], env: Mapping[str, str]
) -> dict[str, ActionTool]:
    """Check every tool against the others; the compiled tools by name, in file order (none
    when any problem was found, here or before)."""
    by_name: dict[str, ToolDraft] = {}
    for draft in drafts:
        if draft.name is None:
            continue
        if draft.name in by_name:
            first = by_name[draft.name]
            p.add(
                "CONFIG_TOOL_DUPLICATE",
                join_path(draft.path, "name"),
                f"the tool {draft.name!r} is already declared at {first.path}; rename one",
            )
            continue
        by_name[draft.name] = draft
    for draft in drafts:
        _check_tool(p, draft, by_name, env)
    if len(p):
        return {}
    return {draft.name: _build(draft) for draft in drafts if draft.name is not None}


def _check_tool(
    p: Problems, draft: ToolDraft, by_name: Mapping[str, ToolDraft], env: Mapping[str, str]
) -> None:
    behavior = join_path(draft.path, "behavior")
    if draft.effect == "read-only" and draft.method not in (None, "GET", "HEAD"):
        p.add(
            "CONFIG_EFFECT_INVALID",
            join_path(behavior, "effect"),
            f"a {draft.method} request cannot be read-only (only GET and HEAD can); declare "
            "effect: side-effect or destructive, with a confirmation",
        )
    confirmation = join_path(behavior, "confirmation")
    if draft.effect in ("side-effect", "destructive"):
        if not draft.confirmation_given:
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                confirmation,
                f"a {draft.effect} needs the person's confirmation: add confirmation: "
                "{required: true}",
            )
        elif draft.confirmation is not None and draft.confirmation.required is not True:
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                join_path(confirmation, "required"),
                f"a {draft.effect} is always confirmed: set required: true",
            )
    elif draft.effect == "read-only" and draft.confirmation_given:
        p.add(
            "CONFIG_CONFIRMATION_INVALID",
            confirmation,
            "a read-only tool runs without confirmation; remove confirmation, or declare "
            "effect: side-effect",
        )
    if draft.recovery is not None and draft.recovery.dependency not in draft.dependencies:
        declared = ", ".join(draft.dependencies) or "none"
        p.add(
            "CONFIG_DEPENDENCY_INVALID",
            join_path(draft.recovery_path, "refresh_dependency"),
            f"{draft.recovery.dependency!r} is not a dependency of this tool (declared: "
            f"{declared})",
        )
    for dep in draft.dependencies.values():
        _check_dependency(p, draft, dep, by_name)
    facts = _facts(p, draft)
    sensitive_inputs = _sensitive_fills(draft)
    for site in draft.sites:
        _check_site(p, draft, site, None, facts, sensitive_inputs, env)
    for dep in draft.dependencies.values():
        for site in dep.sites:
            _check_site(p, draft, site, dep, facts, sensitive_inputs, env)
    _check_cycles(p, draft)


def _check_dependency(
    p: Problems, draft: ToolDraft, dep: DependencyDraft, by_name: Mapping[str, ToolDraft]
) -> None:
    if dep.tool is None:
        return
    where = join_path(dep.path, "tool")
    target = by_name.get(dep.tool)
    if dep.tool == draft.name:
        p.add("CONFIG_DEPENDENCY_CYCLE", where, f"{dep.tool} depends on itself")
        return
    if target is None:
        p.add(
            "CONFIG_DEPENDENCY_INVALID",
            where,
            f"there is no tool {dep.tool!r} in this set; the tools are {', '.join(by_name)}",
        )
        return
    if target.effect != "read-only":
        p.add(
            "CONFIG_DEPENDENCY_INVALID",
            where,
            f"{dep.tool} is not read-only; a dependency runs on its own, so it must be",
        )
    if target.dependencies:
        p.add(
            "CONFIG_DEPENDENCY_INVALID",
            where,
            f"{dep.tool} has dependencies of its own; a dependency runs one request",
        )
    schema = target.input_schema
    if schema is not None:
        properties = schema.get("properties") or {}
        for key in dep.input:
            if key not in properties and schema.get("additionalProperties") is not True:
                p.add(
                    "CONFIG_MAPPING_INVALID",
                    join_path(join_path(dep.path, "input"), key),
                    f"{dep.tool} has no input field {key!r}; its fields are "
                    f"{', '.join(properties) or 'none'}",
                )
        for key in schema.get("required") or []:
            if key not in dep.input:
                p.add(
                    "CONFIG_MAPPING_INVALID",
                    join_path(dep.path, "input"),
                    f"{dep.tool} requires the input field {key!r}; map it here",
                )
    if draft.input_schema is not None:
        properties = draft.input_schema.get("properties") or {}
        required = draft.input_schema.get("required") or []
        for key in dep.fills:
            at = join_path(join_path(dep.path, "fills"), key)
            if key not in properties:
                p.add("CONFIG_MAPPING_INVALID", at, f"the input has no field {key!r} to fill")
            elif key in required:
                p.add(
                    "CONFIG_DEPENDENCY_INVALID",
                    at,
                    f"{key!r} is required, so the model always gives it; make it optional to "
                    "let this dependency fill it",
                )


def _facts(p: Problems, draft: ToolDraft) -> dict[str, str]:
    """The selection facts the tool's dependencies declare: fact → dependency."""
    out: dict[str, str] = {}
    for dep in draft.dependencies.values():
        if dep.select is None:
            continue
        for fact in dep.select.facts:
            if fact in out:
                p.add(
                    "CONFIG_DEPENDENCY_INVALID",
                    join_path(join_path(join_path(dep.path, "select"), "facts"), fact),
                    f"the fact {fact!r} is already declared by the dependency {out[fact]}; "
                    "facts share one namespace per tool",
                )
                continue
            out[fact] = dep.name
    return out


def _sensitive_fills(draft: ToolDraft) -> set[str]:
    """Input fields that a dependency fills from a sensitive field."""
    out: set[str] = set()
    for dep in draft.dependencies.values():
        sensitive = dep.select.sensitive if dep.select is not None else ()
        for key, ref in dep.fills.items():
            if any(covers_path(s, ref.path) for s in sensitive):
                out.add(key)
    return out


def _check_site(
    p: Problems,
    draft: ToolDraft,
    site: RefSite,
    owner: DependencyDraft | None,
    facts: Mapping[str, str],
    sensitive_inputs: set[str],
    env: Mapping[str, str],
) -> None:
    ref, place, at = site.ref, site.place, site.path
    preview = place == "preview"
    if ref.source == "input":
        schema = draft.input_schema
        if schema is not None and ref.path and not property_schema(schema, ref.path):
            fields = ", ".join((schema.get("properties") or {}).keys()) or "none"
            p.add(
                "CONFIG_MAPPING_INVALID",
                at,
                f"{ref} reads no field of the input schema (its fields: {fields})",
            )
            return
        reads_sensitive = ref.path[0] in sensitive_inputs if ref.path else bool(sensitive_inputs)
        if preview and reads_sensitive:
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                at,
                f"{ref} reads an input field filled from a sensitive field; a preview never "
                "shows one",
            )
        return
    if ref.source == "deps":
        dep = draft.dependencies.get(ref.name or "")
        if dep is None:
            declared = ", ".join(draft.dependencies) or "none"
            p.add(
                "CONFIG_MAPPING_INVALID",
                at,
                f"{ref} reads an undeclared dependency {ref.name!r} (declared: {declared})",
            )
            return
        if owner is not None and dep.name == owner.name:
            p.add("CONFIG_DEPENDENCY_CYCLE", at, f"the dependency {owner.name} reads itself")
            return
        if dep.when == "missing" and place in REQUEST_PLACES:
            p.add(
                "CONFIG_MAPPING_INVALID",
                at,
                f"{dep.name} runs only when a field it fills is missing, so the request cannot "
                f"read it; read the filled field ($.input.{next(iter(dep.fills), '<field>')})",
            )
            return
        sensitive = dep.select.sensitive if dep.select is not None else ()
        if preview and any(covers_path(s, ref.path) for s in sensitive):
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                at,
                f"{ref} reads a sensitive field of {dep.name}; a preview never shows one",
            )
        return
    if ref.source == "selection":
        if not preview:
            p.add(
                "CONFIG_MAPPING_INVALID",
                at,
                "a selection fact is for display only; send the real value with "
                "$.deps.<name>.<field>",
            )
        elif (ref.name or "") not in facts:
            declared = ", ".join(facts) or "none"
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                at,
                f"the preview reads the undeclared selection fact {ref.name!r} (declared: "
                f"{declared}); declare it in a dependency's select.facts",
            )
        return
    if ref.source == "secret":
        if preview:
            p.add("CONFIG_CONFIRMATION_INVALID", at, "a preview never shows a secret")
        elif place != "headers":
            p.add(
                "CONFIG_MAPPING_INVALID",
                at,
                "a secret can only be sent in a header (request.headers)",
            )
        elif not env.get(ref.name or ""):
            p.add(
                "CONFIG_SECRET_MISSING",
                at,
                f"the environment variable {ref.name} is not set; set it to the secret",
            )
        return
    if ref.source == "generated":
        if preview:
            p.add(
                "CONFIG_CONFIRMATION_INVALID",
                at,
                "a preview never shows a generated value; the person cannot check it",
            )
        elif place not in REQUEST_PLACES:
            p.add(
                "CONFIG_MAPPING_INVALID",
                at,
                "a generated id belongs to a prepared request; use it in the request only",
            )
        return
    p.add(
        "CONFIG_MAPPING_INVALID",
        at,
        f"{ref} reads a candidate; $.item. is only for select.label, select.facts and fills",
    )


def _edges(dep: DependencyDraft) -> list[str]:
    return [
        site.ref.name
        for site in dep.sites
        if site.ref.source == "deps" and site.ref.name is not None and site.ref.name != dep.name
    ]


def _check_cycles(p: Problems, draft: ToolDraft) -> None:
    deps = draft.dependencies
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    reported: set[frozenset[str]] = set()

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        stack.append(name)
        for nxt in _edges(deps[name]):
            if nxt not in deps:
                continue
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    p.add(
                        "CONFIG_DEPENDENCY_CYCLE",
                        join_path(deps[nxt].path, "input"),
                        "the dependencies form a cycle: " + " → ".join(cycle),
                    )
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[name] = 2

    for name in deps:
        if name not in state:
            visit(name, [])


def _order(deps: Mapping[str, DependencyDraft]) -> list[str]:
    """The dependencies in an order where each comes after those it reads (no cycles here)."""
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        for nxt in _edges(deps[name]):
            if nxt in deps:
                visit(nxt)
        done.append(name)

    for name in deps:
        visit(name)
    return done


def _build(draft: ToolDraft) -> ActionTool:
    assert draft.name is not None
    assert draft.description is not None
    assert draft.input_schema is not None
    assert draft.method is not None
    assert draft.url_path is not None
    assert draft.effect is not None
    dependencies: dict[str, Dependency] = {
        name: build_dependency(draft.dependencies[name]) for name in _order(draft.dependencies)
    }
    confirmation = draft.confirmation or Confirmation(required=False)
    body: Any = draft.body
    return ActionTool(
        name=draft.name,
        title=draft.title,
        description=draft.description,
        input_schema=draft.input_schema,
        method=draft.method,
        path=draft.url_path,
        path_params=draft.path_params,
        query=draft.query,
        headers=draft.headers,
        body=body,
        transport=draft.transport,
        effect=draft.effect,
        confirmation=confirmation,
        recovery=draft.recovery,
        dependencies=dependencies,
        rules=draft.rules,
    )
