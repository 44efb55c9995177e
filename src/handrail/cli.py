"""The ``handrail`` command.

Each subcommand is one ``_add_<name>`` function that registers its parser and sets ``run``, the
function that carries it out and returns the exit status. `main` parses and dispatches.

    handrail serve              run the HTTP API (``--config handrail.yaml``)
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


def _run_serve(args: argparse.Namespace) -> int:
    # Imported here so that other commands never pay for the server's dependencies.
    from .errors import ConfigError
    from .server.config import default_config, load_config

    generated = False
    try:
        if args.config is not None:
            config = load_config(args.config)
        else:
            config, generated = default_config()
        if args.host is not None:
            config.host = args.host
        if args.port is not None:
            config.port = args.port
        config.check_models()
    except ConfigError as exc:
        print(f"handrail serve: {exc}", file=sys.stderr)
        return 2

    import uvicorn

    from .server.app import create_app

    app = create_app(config)
    where = f"http://{config.host}:{config.port}{config.api_prefix}"
    print(f"handrail: serving {where} (OpenAPI at /openapi.json)", flush=True)
    if args.config is None:
        print(
            "handrail: no --config, so the defaults: SQLite file handrail.db here, "
            f"model {config.model!r}, one user 'demo'.",
            flush=True,
        )
        if generated:
            token = config.users[0].token
            print(
                f"handrail: HANDRAIL_TOKEN is not set; the demo user's token for this run is "
                f"{token}\n  curl -H 'Authorization: Bearer {token}' {where}/histories",
                flush=True,
            )
    uvicorn.run(app, host=config.host, port=config.port, log_level=args.log_level)
    return 0


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not from 1 to 65535")
    return value


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the HTTP API",
        description=(
            "Run handrail's HTTP API with uvicorn. Settings come from the YAML file of "
            "--config, then the HANDRAIL_* environment variables, then --host and --port. "
            "Without --config: a SQLite file handrail.db in the working folder, the scripted "
            "model (not AI), and one user 'demo' whose token is HANDRAIL_TOKEN (or a new one, "
            "printed at start)."
        ),
    )
    parser.add_argument(
        "--config", type=Path, default=None, metavar="FILE", help="the YAML config file"
    )
    parser.add_argument("--host", default=None, help="the address to listen on")
    parser.add_argument("--port", type=_port, default=None, help="the port to listen on")
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (default: info)",
    )
    parser.set_defaults(run=_run_serve)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``handrail``, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="handrail",
        description="Put a person in the loop of an AI agent's tool calls.",
    )
    parser.add_argument("--version", action="version", version=f"handrail {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="<command>")
    _add_serve(commands)
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
