"""`slot_init`: a frozen dataclass with slots keeps every behaviour of the one `dataclasses`
makes (frozen, eq, hash, repr, defaults and factories, ``replace``, fields, match, pickling,
the signature and its errors), with an ``__init__`` that sets its slots through their
descriptors."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest

from handrail._frozen import slot_init
from handrail.runtime.committed import LastCommit
from handrail.runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from handrail.runtime.models.base import ModelRequest, StepEnd, TextDelta, ToolCallPart
from handrail.store.connections import ActivityRecord
from handrail.store.events import Carried
from handrail.store.records import History, HistoryChange, RequestRecord, TurnLease
from handrail.store.user_events import UserEvent

#: The order the factories ran in, by name.
CALLS: list[str] = []


def _numbers() -> tuple[int, ...]:
    CALLS.append("numbers")
    return (1,)


def _hash(value: Any) -> int | str:
    try:
        return hash(value)
    except TypeError as error:  # a list field
        return str(error)


def _label() -> str:
    CALLS.append("label")
    return "label"


def _classes(fast: bool) -> tuple[Any, Any, Any]:
    """Three classes, made the same way each time (so their qualified names are equal): a
    kw-only one with defaults and factories, a positional one, and a subclass of it."""
    decorate: Any = slot_init if fast else (lambda cls: cls)

    @decorate
    @dataclass(frozen=True, kw_only=True, slots=True)
    class Record:
        kind: str
        numbers: tuple[int, ...] = field(default_factory=_numbers)
        owner: str
        hidden: int = field(default=0, repr=False, compare=False)
        label: str = field(default_factory=_label)
        note: str | None = None
        tags: tuple[str, ...] = ()

    @decorate
    @dataclass(frozen=True, slots=True)
    class Pair:
        left: int
        right: str = "r"
        extra: list[int] = field(default_factory=list)

    @decorate
    @dataclass(frozen=True, slots=True)
    class Triple(Pair):
        third: float = 1.5
        fourth: dict[str, int] = field(default_factory=dict, kw_only=True)

    return Record, Pair, Triple


PLAIN = _classes(fast=False)
FAST = _classes(fast=True)


def test_it_makes_an_init_that_sets_slots_through_their_descriptors() -> None:
    for plain, fast in zip(PLAIN, FAST, strict=True):
        assert "__setattr__" in plain.__init__.__code__.co_names
        assert "__setattr__" not in fast.__init__.__code__.co_names
        assert fast.__init__.__code__.co_names == ()  # no global or attribute look-up at all


def _pairs() -> list[tuple[Any, Any]]:
    """The same values, made by the plain classes and by the fast ones."""
    made: list[tuple[Any, Any]] = []
    for classes in (PLAIN, FAST):
        record, pair, triple = classes
        made.append(
            (
                record(kind="k", owner="o"),
                record(kind="k", owner="o", note="n", numbers=(7,), label="x", tags=("t",)),
                record(owner="o", kind="k", hidden=3),
                pair(1),
                pair(1, "s", [2]),
                pair(left=1, right="s"),
                triple(1, "s", [2], 2.5, fourth={"a": 1}),
                triple(4),
            )
        )
    return list(zip(*made, strict=True))


def test_values_read_compare_hash_and_print_as_the_plain_dataclass_does() -> None:
    CALLS.clear()
    for plain, fast in _pairs():
        assert type(plain).__qualname__ == type(fast).__qualname__
        assert repr(fast) == repr(plain)
        assert str(fast) == str(plain)
        assert _hash(fast) == _hash(plain)
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
        assert dataclasses.asdict(fast) == dataclasses.asdict(plain)
        assert [getattr(fast, s) for s in type(fast).__slots__] == [
            getattr(plain, s) for s in type(plain).__slots__
        ]
        same = copy.deepcopy(fast)
        assert same == fast
        assert same is not fast
        assert _hash(same) == _hash(fast)
        assert fast != plain  # a dataclass equals only its own class's values
    # The factories ran once a value that left them out, in the fields' order, both ways.
    assert CALLS == ["numbers", "label", "numbers", "label"] * 2
    assert isinstance(_hash(_pairs()[0][1]), int)


def test_factories_make_a_new_value_each_time_and_given_values_are_kept() -> None:
    record, pair, triple = FAST
    given = (5,)
    assert record(kind="k", owner="o", numbers=given).numbers is given
    assert pair(1).extra == []
    assert pair(1).extra is not pair(1).extra
    assert triple(1).fourth == {}
    assert record(kind="k", owner="o").note is None
    assert record(kind="k", owner="o").tags == ()
    assert pair(1).right == "r"


def test_it_stays_frozen() -> None:
    for value in _pairs():
        fast = value[1]
        for name in type(fast).__slots__:
            with pytest.raises(FrozenInstanceError):
                setattr(fast, name, None)
            with pytest.raises(FrozenInstanceError):
                delattr(fast, name)
        with pytest.raises((FrozenInstanceError, AttributeError, TypeError)):
            fast.other = 1


def test_replace_fields_match_and_pickle_as_before() -> None:
    for plain, fast in _pairs():
        changed = dataclasses.replace(fast, **{dataclasses.fields(fast)[0].name: "changed"})
        assert getattr(changed, dataclasses.fields(fast)[0].name) == "changed"
        assert dataclasses.replace(fast) == fast
        assert [f.name for f in dataclasses.fields(fast)] == [
            f.name for f in dataclasses.fields(plain)
        ]
        assert type(fast).__match_args__ == type(plain).__match_args__
        assert copy.copy(fast) == fast
    record, pair, _ = FAST
    value = record(kind="k", owner="o", numbers=(1,))
    assert dataclasses.replace(value, note="n").numbers is value.numbers
    match pair(3, "z"):
        case pair(left, right):
            assert (left, right) == (3, "z")
        case _:
            pytest.fail("no match")


@slot_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Stored:
    """One at the module's level, which pickle finds by its name."""

    name: str
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)


def test_pickle_makes_the_same_value_again() -> None:
    for value in (
        Stored(name="n"),
        Stored(name="n", tags=("t",), extra={"a": 1}),
        UserEvent(kind="reload", user_id="u", data={"x": [1]}, approvers=("admins",)),
    ):
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            again = pickle.loads(pickle.dumps(value, protocol))
            assert again == value
            assert repr(again) == repr(value)


def test_the_signature_and_its_errors_are_the_same() -> None:
    for plain, fast in zip(PLAIN, FAST, strict=True):
        assert inspect.signature(fast) == inspect.signature(plain)
        assert str(inspect.signature(fast)) == str(inspect.signature(plain))
        assert fast.__init__.__qualname__ == plain.__init__.__qualname__
        assert fast.__init__.__annotations__ == plain.__init__.__annotations__
        assert fast.__init__.__module__ == plain.__init__.__module__
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}),
        ((), {"kind": "k"}),
        ((), {"kind": "k", "owner": "o", "unknown": 1}),
        (("k",), {"owner": "o"}),
        ((1, "s", [], 2.0), {}),
        ((), {"right": "s"}),
    ]
    for plain, fast in zip(PLAIN, FAST, strict=True):
        for args, kwargs in calls:
            errors = []
            for cls in (plain, fast):
                try:
                    cls(*args, **kwargs)
                except TypeError as error:
                    errors.append(str(error))
                else:
                    errors.append("")
            assert errors[0] == errors[1], (plain, args, kwargs)


def test_it_takes_only_what_it_keeps_exactly() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        a: int
        b: InitVar[int]

    @dataclass(frozen=True, slots=True)
    class LeftOut:
        a: int
        b: int = field(default=0, init=False)

    class NotADataclass:
        __slots__ = ("a",)

    for cls in (NoSlots, NotFrozen, PostInit, WithInitVar, LeftOut, NotADataclass):
        with pytest.raises(TypeError):
            slot_init(cls)


@pytest.mark.parametrize(
    "cls",
    [
        UserEvent,
        Carried,
        History,
        HistoryChange,
        TurnLease,
        RequestRecord,
        ActivityRecord,
        ModelRequest,
        TextDelta,
        ToolCallPart,
        StepEnd,
        ToolCall,
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        LastCommit,
    ],
)
def test_the_records_made_each_cycle_have_it(cls: type) -> None:
    init: Any = cls.__init__
    assert init.__code__.co_names == ()
    assert dataclasses.is_dataclass(cls)
