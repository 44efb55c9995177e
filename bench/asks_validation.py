"""Benchmark: how fast `validate_ask_input` checks an ask, against pydantic and jsonschema.

A script, not a test: it prints figures and ratios measured in one process and asserts nothing
about time. Run it with ``make bench`` (installs pydantic and jsonschema, the ``bench`` extra)
or ``.venv/bin/python bench/asks_validation.py``.

What it measures, as the median time of one call:

1. The plan ask (the spec's "Choose a plan" choice ask, valid) validated by
   - ours: ``validate_ask_input("choice", plan)``,
   - pydantic: a pydantic v2 model of the choice ask (``extra="forbid"``, strict types, every
     rule pydantic can express: lengths, the option id pattern, 2-50 options, the ``select``
     literal, optional fields) validating the same dict with ``model_validate``,
   - jsonschema: ``Draft7Validator`` on our own ``ask_input_json_schema("choice")``, compiled
     once, with ``is_valid``.
2. An invalid plan ask (an unknown key and a bad option id): each contender lists every error it
   finds (ours with a fix each, pydantic ``ValidationError.errors()``, jsonschema
   ``iter_errors``).
3. Every shared conformance fixture (``../shared/conformance/terreno/{valid,invalid}``): ours
   and jsonschema (the input schema of the fixture's kind) over the whole set, and ours on each
   fixture alone.

Fairness on a small, noisy machine: the contenders run interleaved in rounds (each round times a
batch of calls of every contender, the order rotating and alternating between rounds), the
garbage collector is paused during a batch, and each batch is sized to last a few milliseconds.
The reported time is the median over the rounds; "noise" is half the interquartile range of the
rounds, relative to the median.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter_ns
from typing import Annotated, Any, Literal

try:
    import jsonschema
    import pydantic
    from pydantic import BaseModel, ConfigDict, Field, StringConstraints
except ImportError as error:  # pragma: no cover - a hint for a bare environment
    sys.exit(
        f"{error.name} is missing: install the bench extra (make bench, or "
        "pip install -e '.[bench]') and run again."
    )

from _common import PLAN_ASK, fmt_time, machine_line, package_version, print_table
from handrail.asks import ASK_LIMITS, ask_input_json_schema, validate_ask_input

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "conformance" / "terreno"


#: The plan ask with an unknown key and an option id that breaks the pattern.
BAD_PLAN_ASK: dict[str, Any] = {
    **PLAN_ASK,
    "markdown": True,
    "options": [
        PLAN_ASK["options"][0],
        {"id": "Team Plan", "label": "Team", "description": "$20 per seat"},
        PLAN_ASK["options"][2],
    ],
}


# --- the pydantic baseline --------------------------------------------------------------------

_CHOICE = ASK_LIMITS["choice"]


def _text(max_length: int) -> StringConstraints:
    return StringConstraints(min_length=1, max_length=max_length)


_OptionId = Annotated[
    str,
    StringConstraints(pattern=_CHOICE["optionIdPattern"], max_length=_CHOICE["optionIdMaxLength"]),
]
_Prompt = Annotated[str, _text(ASK_LIMITS["promptMaxLength"])]
_Title = Annotated[str, _text(ASK_LIMITS["titleMaxLength"])]
_SubmitLabel = Annotated[str, _text(ASK_LIMITS["submitLabelMaxLength"])]
_Label = Annotated[str, _text(_CHOICE["optionLabelMaxLength"])]
_Description = Annotated[str, _text(_CHOICE["optionDescriptionMaxLength"])]


class PlanOption(BaseModel):
    """One option of a choice ask, as far as pydantic can say it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: _OptionId
    label: _Label
    description: _Description | None = None


class ChoiceAsk(BaseModel):
    """A choice ask with every rule pydantic can express without a custom validator. The field
    names are the wire's camelCase keys, so the same dict validates unchanged."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: _Prompt
    title: _Title | None = None
    submitLabel: _SubmitLabel | None = None
    allowDecline: bool | None = None
    select: Literal["one", "many"]
    options: Annotated[
        list[PlanOption], Field(min_length=_CHOICE["optionsMin"], max_length=_CHOICE["optionsMax"])
    ]
    default: Annotated[list[_OptionId], Field(max_length=_CHOICE["optionsMax"])] | None = None
    minSelected: Annotated[int, Field(ge=0, le=_CHOICE["optionsMax"] + 1)] | None = None
    maxSelected: Annotated[int, Field(ge=1, le=_CHOICE["optionsMax"] + 1)] | None = None
    allowOther: bool | None = None
    otherLabel: _Label | None = None


# --- contenders ---------------------------------------------------------------------------------

_VALIDATOR_CLASS = jsonschema.Draft7Validator
_SCHEMAS: dict[tuple[str, str], Any] = {}


def json_schema_validator(kind: str, surface: str = "full") -> Any:
    """The Draft7Validator of our input schema for `kind` on `surface`, compiled once."""
    if (kind, surface) not in _SCHEMAS:
        schema = ask_input_json_schema(kind, surface=surface)
        _VALIDATOR_CLASS.check_schema(schema)
        _SCHEMAS[kind, surface] = _VALIDATOR_CLASS(schema)
    return _SCHEMAS[kind, surface]


def ours_choice(ask: Any) -> Any:
    return validate_ask_input("choice", ask)


def pydantic_choice(ask: Any) -> Any:
    return ChoiceAsk.model_validate(ask)


def pydantic_choice_errors(ask: Any) -> Any:
    try:
        ChoiceAsk.model_validate(ask)
    except pydantic.ValidationError as error:
        return error.errors()
    return []


def jsonschema_choice(ask: Any) -> Any:
    return json_schema_validator("choice").is_valid(ask)


def jsonschema_choice_errors(ask: Any) -> Any:
    return list(json_schema_validator("choice").iter_errors(ask))


#: Fixtures whose errors the spec makes true only on the compact surface, as in
#: tests/asks/test_conformance.py: a plain select "many" ask is valid on the full surface.
COMPACT_ONLY_ERRORS = frozenset({"invalid/choice-select-many"})


@dataclass(frozen=True)
class Fixture:
    name: str
    valid: bool
    kind: str
    input: Any
    surface: str = "full"
    errors: list[dict[str, str]] = field(default_factory=list)


def load_fixtures() -> list[Fixture]:
    fixtures: list[Fixture] = []
    for folder in ("valid", "invalid"):
        for path in sorted((FIXTURES / folder).glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            name = f"{folder}/{path.stem}"
            fixtures.append(
                Fixture(
                    name=name,
                    valid=folder == "valid",
                    kind=data["kind"],
                    input=data["input"],
                    surface="compact" if name in COMPACT_ONLY_ERRORS else "full",
                    errors=data.get("errors", []),
                )
            )
    return fixtures


def ours_sweep(fixtures: Sequence[Fixture]) -> Any:
    return [validate_ask_input(f.kind, f.input, surface=f.surface) for f in fixtures]


def ours_fixture(f: Fixture) -> Any:
    return validate_ask_input(f.kind, f.input, surface=f.surface)


def jsonschema_sweep(fixtures: Sequence[Fixture]) -> Any:
    return [
        json_schema_validator(f.kind, f.surface).is_valid(f.input)
        if f.valid
        else list(json_schema_validator(f.kind, f.surface).iter_errors(f.input))
        for f in fixtures
    ]


# --- timing -------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    fn: Callable[[Any], Any]
    arg: Any
    calls: int = 1
    samples: list[float] = field(default_factory=list)

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median, a rough noise figure."""
        if len(self.samples) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4)
        return (q3 - q1) / self.median_ns


def _batch(fn: Callable[[Any], Any], arg: Any, calls: int) -> float:
    """Nanoseconds per call over `calls` calls, with the garbage collector paused."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        start = perf_counter_ns()
        for _ in range(calls):
            fn(arg)
        elapsed = perf_counter_ns() - start
    finally:
        if gc_was_on:
            gc.enable()
    return elapsed / calls


def _calibrate(contender: Contender, batch_ns: float) -> None:
    """Warm up, then size the batch so that it lasts about `batch_ns`."""
    for _ in range(3):
        contender.fn(contender.arg)
    calls = 1
    while True:
        per_call = _batch(contender.fn, contender.arg, calls)
        if per_call * calls >= batch_ns / 10 or calls >= 1_000_000:
            break
        calls *= 2
    contender.calls = max(1, round(batch_ns / per_call))


def run_rounds(contenders: Sequence[Contender], rounds: int, batch_ns: float) -> None:
    """Time every contender in `rounds` rounds, interleaved: each round runs one batch of each,
    in an order that rotates every round and reverses every other round."""
    for contender in contenders:
        _calibrate(contender, batch_ns)
    count = len(contenders)
    for index in range(rounds):
        order = [contenders[(index + offset) % count] for offset in range(count)]
        if index % 2:
            order.reverse()
        for contender in order:
            contender.samples.append(_batch(contender.fn, contender.arg, contender.calls))


# --- reporting ----------------------------------------------------------------------------------


def fmt_rate(ns: float) -> str:
    return f"{1e9 / ns:,.0f}/s"


def contender_rows(contenders: Sequence[Contender], ours: Contender) -> list[list[str]]:
    rows = []
    for c in contenders:
        ratio = c.median_ns / ours.median_ns
        rows.append(
            [
                c.name,
                fmt_time(c.median_ns),
                fmt_rate(c.median_ns),
                f"±{c.spread * 50:.0f}%",
                f"{c.calls}",
                "1.00×" if c is ours else f"{ratio:.2f}×",
            ]
        )
    return rows


HEADERS = ("contender", "median/call", "validations", "noise", "calls/batch", "time/ours")


def versions_line() -> str:
    return (
        f"handrail {package_version('handrail')}, pydantic {pydantic.VERSION}, "
        f"jsonschema {package_version('jsonschema')}"
    )


def check_contenders(fixtures: Sequence[Fixture]) -> tuple[list[str], list[Fixture]]:
    """What the contenders get wrong, so the figures are known to time correct work, and the
    fixtures ours can be timed on (those where it does not raise)."""
    problems: list[str] = []
    if validate_ask_input("choice", PLAN_ASK):
        problems.append("ours rejects the plan ask")
    if not validate_ask_input("choice", BAD_PLAN_ASK):
        problems.append("ours accepts the bad plan ask")
    if pydantic_choice_errors(PLAN_ASK):
        problems.append("pydantic rejects the plan ask")
    if not pydantic_choice_errors(BAD_PLAN_ASK):
        problems.append("pydantic accepts the bad plan ask")
    if not jsonschema_choice(PLAN_ASK):
        problems.append("jsonschema rejects the plan ask")
    usable: list[Fixture] = []
    for f in fixtures:
        try:
            errors = validate_ask_input(f.kind, f.input, surface=f.surface)
        except Exception as error:
            problems.append(f"ours raises {error!r} on {f.name}; left out of the timings")
            continue
        usable.append(f)
        got = [{"path": e.path, "code": e.code} for e in errors]
        if got != f.errors:
            problems.append(f"ours disagrees with the fixture {f.name}: {got}")
    return problems, usable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=30, help="rounds per comparison (30)")
    parser.add_argument(
        "--batch-ms", type=float, default=10.0, help="target length of one batch in ms (10)"
    )
    parser.add_argument(
        "--every-fixture", action="store_true", help="list ours on every fixture, not the top 8"
    )
    args = parser.parse_args(argv)
    batch_ns = args.batch_ms * 1_000_000

    print("handrail bench: validate_ask_input vs pydantic v2 vs jsonschema Draft7Validator")
    print(machine_line(versions_line()))
    print(
        f"{args.rounds} interleaved rounds, batches of about {args.batch_ms:g} ms; median per call "
        "shown, noise = half the interquartile range / median"
    )

    problems, fixtures = check_contenders(load_fixtures())
    for problem in problems:
        print(f"WARNING: {problem}")

    # 1. The valid plan ask.
    ours = Contender("handrail validate_ask_input", ours_choice, PLAN_ASK)
    pyd = Contender("pydantic model_validate", pydantic_choice, PLAN_ASK)
    jss = Contender("jsonschema Draft7 is_valid", jsonschema_choice, PLAN_ASK)
    run_rounds([ours, pyd, jss], args.rounds, batch_ns)
    print_table(
        '1. Valid "Choose a plan" choice ask', HEADERS, contender_rows([ours, pyd, jss], ours)
    )

    # 2. The invalid plan ask: every error.
    bad_ours = Contender("handrail validate_ask_input", ours_choice, BAD_PLAN_ASK)
    bad_pyd = Contender("pydantic ValidationError.errors()", pydantic_choice_errors, BAD_PLAN_ASK)
    bad_jss = Contender("jsonschema Draft7 iter_errors", jsonschema_choice_errors, BAD_PLAN_ASK)
    run_rounds([bad_ours, bad_pyd, bad_jss], args.rounds, batch_ns)
    print_table(
        "2. Invalid plan ask (unknown key `markdown`, option id `Team Plan`): every error",
        HEADERS,
        contender_rows([bad_ours, bad_pyd, bad_jss], bad_ours),
    )
    ours_errors = validate_ask_input("choice", BAD_PLAN_ASK)
    print(
        f"   errors found: ours {len(ours_errors)} (each with a fix), "
        f"pydantic {len(pydantic_choice_errors(BAD_PLAN_ASK))}, "
        f"jsonschema {len(jsonschema_choice_errors(BAD_PLAN_ASK))}"
    )
    for error in ours_errors:
        print(f"   - {error.path} {error.code}: {error.message}\n     fix: {error.fix}")

    # 3. The conformance fixtures.
    valid = [f for f in fixtures if f.valid]
    invalid = [f for f in fixtures if not f.valid]
    sweeps = [
        Contender(f"handrail, {len(valid)} valid fixtures", ours_sweep, valid),
        Contender(f"jsonschema, {len(valid)} valid fixtures", jsonschema_sweep, valid),
        Contender(f"handrail, {len(invalid)} invalid fixtures", ours_sweep, invalid),
        Contender(f"jsonschema, {len(invalid)} invalid fixtures", jsonschema_sweep, invalid),
    ]
    run_rounds(sweeps, args.rounds, batch_ns)
    rows = []
    for ours_sweep_c, js_sweep_c, group in (
        (sweeps[0], sweeps[1], valid),
        (sweeps[2], sweeps[3], invalid),
    ):
        for c in (ours_sweep_c, js_sweep_c):
            per_ask = c.median_ns / len(group)
            rows.append(
                [
                    c.name,
                    fmt_time(c.median_ns),
                    fmt_time(per_ask),
                    fmt_rate(per_ask),
                    f"±{c.spread * 50:.0f}%",
                    f"{c.median_ns / ours_sweep_c.median_ns:.2f}×",
                ]
            )
    print_table(
        f"3. Every conformance fixture ({FIXTURES})",
        ("sweep", "median/sweep", "mean/ask", "validations", "noise", "time/ours"),
        rows,
    )

    each = [Contender(f.name, ours_fixture, f) for f in fixtures]
    run_rounds(each, max(5, args.rounds // 3), batch_ns / 8)
    each.sort(key=lambda c: c.median_ns, reverse=True)
    shown = each if args.every_fixture else each[:8]
    print_table(
        f"   ours per fixture ({'all' if args.every_fixture else 'slowest 8'} of {len(each)}; "
        f"median over {max(5, args.rounds // 3)} rounds)",
        ("fixture", "median/call", "validations"),
        [[c.name, fmt_time(c.median_ns), fmt_rate(c.median_ns)] for c in shown],
    )
    medians = [c.median_ns for c in each]
    print(
        f"   all {len(each)} fixtures: median {fmt_time(statistics.median(medians))}, "
        f"fastest {fmt_time(min(medians))}, slowest {fmt_time(max(medians))}"
    )

    # Targets.
    vs_pydantic = ours.median_ns / pyd.median_ns
    vs_jsonschema = jss.median_ns / ours.median_ns
    print("\nTargets (valid plan ask):")
    print(
        f"   ours / pydantic   = {vs_pydantic:.2f}  (target <= 1.00): "
        f"{'met' if vs_pydantic <= 1.0 else 'NOT met'}"
    )
    print(
        f"   jsonschema / ours = {vs_jsonschema:.1f}  (target >= 15): "
        f"{'met' if vs_jsonschema >= 15 else 'NOT met'}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
