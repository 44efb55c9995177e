"""Input schemas of Python tools, derived from type hints and docstrings.

`input_schema_from_function` turns a function's parameters into the JSON Schema of its input;
`derive_type` does it for one annotation and also says how to turn the JSON value back into the
annotated type (a dataclass, an enum). The docstring helpers read the description of a tool and
of its parameters (Google ``Args:``, NumPy ``Parameters`` and Sphinx ``:param:`` styles).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    is_typeddict,
)

from ..errors import ConfigError

#: Turns a checked JSON value into the annotated type.
Convert = Callable[[Any], Any]
_SUPPORTED = (
    "use str, int, float, bool, None, list[T], dict[str, T], Literal[...], an Enum, a "
    "TypedDict, a dataclass, Any, T | None, or Annotated[T, 'description']"
)


def input_schema_from_function(function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of a function's keyword arguments, from its type hints.

    Each parameter becomes a property (see the "Defining tools" table of the tools reference
    for each annotation's schema); one without a default is required; a default becomes
    ``default``; ``Annotated[T, "text"]`` or a documented ``Args:`` (or NumPy ``Parameters``)
    entry becomes ``description``. Unsupported annotations, missing ones, positional-only
    parameters, ``*args`` and ``**kwargs`` raise `ConfigError` naming the parameter."""
    docs = docstring_params(docstring_of(function))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in signature_of(function).parameters.values():
        where = f"parameter {param.name!r} of {qualname_of(function)}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            stars = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise ConfigError(
                f"{where}: a tool takes named parameters only, not {stars}{param.name}"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ConfigError(f"{where} is positional-only; tools are called with keywords")
        if param.annotation is param.empty:
            raise ConfigError(f"{where} has no type annotation; {_SUPPORTED}")
        try:
            schema = dict(derive_type(param.annotation, param.name, frozenset())[0])
        except ConfigError as exc:
            raise ConfigError(f"{exc} (in {qualname_of(function)})") from None
        if "description" not in schema and param.name in docs:
            schema["description"] = docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        else:
            default = _json_default(param.default)
            if default is not _NO_DEFAULT:
                schema["default"] = default
        properties[param.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def derive_type(
    tp: Any, path: str, seen: frozenset[type] = frozenset()
) -> tuple[dict[str, Any], Convert | None]:
    """The schema of one annotation, and how to turn its JSON value into the annotated type
    (None when the JSON value is already right)."""
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        schema, convert = derive_type(base, path, seen)
        text = _metadata_description(metadata)
        return ({**schema, "description": text} if text else schema), convert
    if origin in (Required, NotRequired):
        return derive_type(get_args(tp)[0], path, seen)
    if tp is Any:
        return {}, None
    if tp is None or tp is type(None):
        return {"type": "null"}, None
    if tp is str:
        return {"type": "string"}, None
    if tp is bool:
        return {"type": "boolean"}, None
    if tp is int:
        return {"type": "integer"}, _to_int
    if tp is float:
        return {"type": "number"}, _to_float
    if origin in (Union, types.UnionType):
        return _derive_optional(tp, path, seen)
    if origin is Literal:
        return _enum_schema(list(get_args(tp)), tp, path), None
    if tp is list or origin is list:
        return _derive_list(tp, path, seen)
    if tp is dict or origin is dict:
        return _derive_dict(tp, path, seen)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        enum_type = tp
        schema = _enum_schema([member.value for member in enum_type], tp, path)
        return schema, lambda value: value if isinstance(value, enum_type) else enum_type(value)
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or is_typeddict(tp)):
        if tp in seen:
            raise ConfigError(
                f"parameter {path!r}: {tp.__name__} refers to itself; a tool input "
                "cannot be recursive"
            )
        return _derive_record(tp, path, seen | {tp})
    raise ConfigError(f"parameter {path!r} has the type {_type_name(tp)}; {_SUPPORTED}")


def _derive_optional(
    tp: Any, path: str, seen: frozenset[type]
) -> tuple[dict[str, Any], Convert | None]:
    args = get_args(tp)
    rest = [a for a in args if a is not type(None)]
    if len(rest) != 1 or len(rest) == len(args):
        raise ConfigError(
            f"parameter {path!r} has the type {_type_name(tp)}: a union other than T | None "
            "cannot be a tool input; use one type, a Literal, or T | None"
        )
    schema, convert = derive_type(rest[0], path, seen)
    if convert is None:
        return _nullable(schema), None
    inner = convert
    return _nullable(schema), lambda value: None if value is None else inner(value)


def _derive_list(
    tp: Any, path: str, seen: frozenset[type]
) -> tuple[dict[str, Any], Convert | None]:
    args = get_args(tp)
    if not args:
        return {"type": "array"}, None
    items, convert = derive_type(args[0], f"{path}[]", seen)
    if convert is None:
        return {"type": "array", "items": items}, None
    each = convert
    return {"type": "array", "items": items}, lambda value: [each(item) for item in value]


def _derive_dict(
    tp: Any, path: str, seen: frozenset[type]
) -> tuple[dict[str, Any], Convert | None]:
    args = get_args(tp)
    if not args:
        return {"type": "object"}, None
    if args[0] is not str:
        raise ConfigError(
            f"parameter {path!r} has the type {_type_name(tp)}: JSON object keys are strings, "
            "so use dict[str, T]"
        )
    values, convert = derive_type(args[1], f"{path}[]", seen)
    schema = {"type": "object", "additionalProperties": values}
    if convert is None:
        return schema, None
    each = convert
    return schema, lambda value: {key: each(item) for key, item in value.items()}


def _derive_record(
    tp: type, path: str, seen: frozenset[type]
) -> tuple[dict[str, Any], Convert | None]:
    """A dataclass or a TypedDict as a nested object."""
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception as exc:
        raise ConfigError(
            f"parameter {path!r}: the type hints of {tp.__name__} do not resolve ({exc}); "
            "define the types they name at module level"
        ) from None
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Convert] = {}
    if dataclasses.is_dataclass(tp):
        for item in dataclasses.fields(tp):
            if not item.init:
                continue
            sub, convert = derive_type(hints[item.name], f"{path}.{item.name}", seen)
            default: Any = _NO_DEFAULT
            if item.default is not dataclasses.MISSING:
                default = _json_default(item.default)
            elif item.default_factory is not dataclasses.MISSING:
                default = _json_default(item.default_factory())
            else:
                required.append(item.name)
            properties[item.name] = sub if default is _NO_DEFAULT else {**sub, "default": default}
            if convert is not None:
                converters[item.name] = convert
    else:
        required_keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
        for key, hint in hints.items():
            properties[key], convert = derive_type(hint, f"{path}.{key}", seen)
            if _typed_dict_required(hint, default=key in required_keys):
                required.append(key)
            if convert is not None:
                converters[key] = convert
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    record = tp
    is_dataclass = dataclasses.is_dataclass(tp)

    def convert_record(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        data = {k: (converters[k](v) if k in converters else v) for k, v in value.items()}
        return record(**data) if is_dataclass else data

    return schema, convert_record if (is_dataclass or converters) else None


def _typed_dict_required(hint: Any, *, default: bool) -> bool:
    """Whether a TypedDict key is required: its resolved hint's ``Required`` or
    ``NotRequired`` first (``__required_keys__`` misses them in Python 3.11 when the
    annotations are strings), else `default`, from ``__required_keys__``."""
    while True:
        origin = get_origin(hint)
        if origin is Required:
            return True
        if origin is NotRequired:
            return False
        if origin is not Annotated:
            return default
        hint = get_args(hint)[0]


def _enum_schema(values: list[Any], tp: Any, path: str) -> dict[str, Any]:
    json_types = {_json_type(v) for v in values}
    if None in json_types:
        raise ConfigError(
            f"parameter {path!r} has the type {_type_name(tp)}: its values must be strings, "
            "numbers, booleans or None"
        )
    schema: dict[str, Any] = {}
    if len(json_types) == 1:
        schema["type"] = json_types.pop()
    schema["enum"] = values
    return schema


def _json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` that also accepts null: ``"null"`` added to its type, None to its enum."""
    if not schema:
        return schema
    out = dict(schema)
    if "type" in out:
        kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = kinds if "null" in kinds else [*kinds, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _metadata_description(metadata: list[Any]) -> str | None:
    """The description in ``Annotated`` metadata: a plain string, or an object with a
    ``description`` (pydantic's Field) or ``documentation`` (PEP 727's Doc) string."""
    for item in metadata:
        if isinstance(item, str) and item.strip():
            return item.strip()
        for attribute in ("description", "documentation"):
            text = getattr(item, attribute, None)
            if isinstance(text, str) and text.strip():
                return text.strip()
    return None


class _NoDefault:
    def __repr__(self) -> str:
        return "<no JSON default>"


_NO_DEFAULT: Final = _NoDefault()


def _json_default(value: Any) -> Any:
    """A default as JSON, or `_NO_DEFAULT` when it has no JSON form (it is then left out of
    the schema; the parameter stays optional)."""
    value = to_json(value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _NO_DEFAULT
    return value


def to_json(value: Any) -> Any:
    """Dataclass instances as dicts, enums as their values, tuples as lists, recursively."""
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


def _to_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _to_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def unwrap(function: Any) -> Any:
    while isinstance(function, functools.partial):
        function = function.func
    return function


def qualname_of(function: Any) -> str:
    target = unwrap(function)
    return str(getattr(target, "__qualname__", None) or type(target).__qualname__)


def signature_of(function: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(function, eval_str=True)
    except (NameError, SyntaxError, TypeError) as exc:
        raise ConfigError(
            f"the type hints of {qualname_of(function)} do not resolve ({exc}); define the types "
            "they name at module level"
        ) from None
    except ValueError as exc:
        raise ConfigError(f"{qualname_of(function)} has no signature to read ({exc})") from None


# --------------------------------------------------------------------------------- docstrings

_GOOGLE_ARGS: Final = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*$"
)
_GOOGLE_SECTION: Final = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|"
    r"Raises|Examples?|Notes?|Attributes|See Also|Warnings?|References|Todo):\s*$"
)
_GOOGLE_ENTRY: Final = re.compile(
    r"^\*{0,2}(?P<name>[A-Za-z_]\w*)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$"
)
_NUMPY_PARAMS: Final = ("Parameters", "Other Parameters", "Keyword Arguments")
_SPHINX_PARAM: Final = re.compile(
    r"^:param\s+(?:[^:]*\s)?(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<text>.*)$"
)


def docstring_of(function: Any) -> str:
    target = unwrap(function)
    doc = target.__doc__ if inspect.isroutine(target) else inspect.getdoc(target)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def docstring_summary(doc: str) -> str:
    """The first paragraph of a docstring, its lines joined; empty when it opens with a
    section such as ``Args:``."""
    lines: list[str] = []
    for line in inspect.cleandoc(doc).splitlines():
        text = line.strip()
        if not text:
            if lines:
                break
            continue
        if _GOOGLE_SECTION.match(text) or text.startswith(":"):
            break
        lines.append(text)
    return " ".join(lines)


def docstring_params(doc: str) -> dict[str, str]:
    """Parameter descriptions from a docstring's Google-style ``Args:`` section, NumPy-style
    ``Parameters`` section, or Sphinx ``:param name:`` lines; continuation lines joined."""
    lines = inspect.cleandoc(doc).splitlines()
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        indent = _indent(lines[i])
        if _GOOGLE_ARGS.match(text):
            i = _google_params(lines, i + 1, indent, out)
        elif text in _NUMPY_PARAMS and _is_rule(lines, i + 1):
            i = _numpy_params(lines, i + 2, indent, out)
        elif match := _SPHINX_PARAM.match(text):
            parts = [match["text"]]
            i += 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > indent:
                parts.append(lines[i].strip())
                i += 1
            _put(out, [match["name"]], parts)
        else:
            i += 1
    return out


def _google_params(lines: list[str], i: int, header: int, out: dict[str, str]) -> int:
    entry: int | None = None
    name: str | None = None
    parts: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent <= header:
            break
        if entry is None:
            entry = indent
        if indent <= entry:
            _put(out, [name] if name else [], parts)
            match = _GOOGLE_ENTRY.match(line.strip())
            name, parts = (match["name"], [match["text"]]) if match else (None, [])
        elif name is not None:
            parts.append(line.strip())
        i += 1
    _put(out, [name] if name else [], parts)
    return i


def _numpy_params(lines: list[str], i: int, header: int, out: dict[str, str]) -> int:
    names: list[str] = []
    parts: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent < header or (indent == header and _is_rule(lines, i + 1)):
            break
        if indent == header:
            _put(out, names, parts)
            head = line.strip().split(":", 1)[0]
            names = [n.strip().lstrip("*") for n in head.split(",") if n.strip()]
            parts = []
        else:
            parts.append(line.strip())
        i += 1
    _put(out, names, parts)
    return i


def _put(out: dict[str, str], names: list[str], parts: list[str]) -> None:
    text = " ".join(p for p in parts if p).strip()
    if text:
        for name in names:
            out[name] = text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_rule(lines: list[str], i: int) -> bool:
    return i < len(lines) and len(lines[i].strip()) >= 3 and set(lines[i].strip()) == {"-"}
