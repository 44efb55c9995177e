"""The ``handrail`` command.

Each subcommand is one ``_add_<name>`` function that registers its parser and sets ``run``, the
function that carries it out and returns the exit status. `main` parses and dispatches.

    handrail schemas            write the JSON Schema documents into handrail/asks/schemas/
    handrail schemas --check    exit 1 when a committed document is out of date
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from . import __version__

Command = Callable[[argparse.Namespace], int]


def _run_schemas(args: argparse.Namespace) -> int:
    # Imported here so that other commands never pay for modules they do not use.
    from .asks.schemas import SCHEMAS_FOLDER, schema_files_out_of_date, write_ask_json_schemas

    folder: Path | None = args.folder
    if args.check:
        stale = schema_files_out_of_date(folder)
        shown = folder if folder is not None else SCHEMAS_FOLDER
        if not stale:
            print(f"The JSON Schema documents in {shown} are up to date.")
            return 0
        fix = "handrail schemas" if folder is None else f"handrail schemas --folder {folder}"
        print(f"The JSON Schema documents in {shown} are out of date:", file=sys.stderr)
        for name in stale:
            print(f"  {name}", file=sys.stderr)
        print(f"Run `{fix}` to regenerate them.", file=sys.stderr)
        return 1
    for path in write_ask_json_schemas(folder):
        print(path)
    return 0


def _add_schemas(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "schemas",
        help="write the JSON Schema documents of the ask protocol",
        description=(
            "Write simpleCard, turnRequest, turnResponse and pendingAsksResponse as "
            "<name>.schema.json into the package's handrail/asks/schemas/ folder, and print "
            "each path."
        ),
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and list the files that are missing or out of date",
    )
    parser.add_argument(
        "--folder",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder to write or check instead of the package's schemas folder",
    )
    parser.set_defaults(run=_run_schemas)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``handrail``, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="handrail",
        description="Put a person in the loop of an AI agent's tool calls.",
    )
    parser.add_argument("--version", action="version", version=f"handrail {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="<command>")
    _add_schemas(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``handrail`` with `argv` (default: the process arguments) and return its exit status.

    Usage errors return 2 and ``--help`` or ``--version`` return 0, as argparse would exit.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0
        return 2
    run: Command | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
