"""What the benchmark scripts share: the spec's plan ask, the machine line and table printing."""

from __future__ import annotations

import copy
import datetime as dt
import os
import platform
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from handrail.demo.agent import PLAN_PICKER

#: The spec's "Choose a plan" example (agent-ui-asks.md), as the demo agent asks it.
PLAN_ASK: dict[str, Any] = copy.deepcopy(dict(PLAN_PICKER))


def fmt_time(ns: float, *, micro_digits: int = 2) -> str:
    if ns >= 1_000_000:
        return f"{ns / 1_000_000:.2f} ms"
    if ns >= 1_000:
        return f"{ns / 1_000:.{micro_digits}f} µs"
    return f"{ns:.0f} ns"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    print(f"\n{title}\n{line(headers)}\n{'  '.join('-' * w for w in widths)}")
    for row in rows:
        print(line(row))


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def machine_line(versions: str) -> str:
    """When and where: the time, machine, CPUs, Python, then `versions`, then the load."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC | {platform.machine()} "
        f"{platform.system()} | {cpus} CPUs | Python {platform.python_version()} | "
        f"{versions} | load {load}"
    )


def before_src(path: Path) -> Path:
    """The folder that holds the `handrail` package of a --before checkout: `path` itself, or
    its ``src/`` when given the checkout's root. Exits with a message when neither holds it (the
    "before" runs would import this checkout's handrail, and every ratio would be 1)."""
    for candidate in (path, path / "src"):
        if (candidate / "handrail" / "__init__.py").is_file():
            return candidate.resolve()
    raise SystemExit(
        f"--before {path}: no handrail package there or in its src/; give another checkout's "
        "root or its src/ folder."
    )
