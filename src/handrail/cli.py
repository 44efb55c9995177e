"""The ``handrail`` command.

Each subcommand is one ``_add_<name>`` function that registers its parser and sets ``run``, the
function that carries it out and returns the exit status. `main` parses and dispatches.

    handrail serve              run the HTTP API (``--config handrail.yaml``)
    handrail demo               run the web UI and the demo agent, and open the browser
    handrail check FILE...      compile HTTP action-set files and print every problem
    handrail catalog check [DIR]  check the app definitions (the shipped ones, or DIR's)
    handrail secret-key         print a new key for HANDRAIL_SECRET_KEY
    handrail schemas            write the JSON Schema documents into handrail/asks/schemas/
    handrail schemas --check    exit 1 when a committed document is out of date
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__

if TYPE_CHECKING:
    from .server.config import ServerConfig

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
        sockets = _ready_to_serve(config, args.log_level, settings=True)
    except (ConfigError, OSError) as exc:
        print(f"handrail serve: {exc}", file=sys.stderr)
        return 2

    from .server.app import create_app
    from .server.serving import Server, uvicorn_config

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
    server = Server(uvicorn_config(app, config, log_level=args.log_level))
    server.run(sockets=sockets)
    return 0 if server.started else 1


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
        help="the log level of the server's lines, uvicorn's and handrail's (default: info)",
    )
    parser.set_defaults(run=_run_serve)


def _ready_to_serve(config: ServerConfig, log_level: str, *, settings: bool) -> list[socket.socket]:
    """What `handrail serve` and `handrail demo` check before the app is made, in order: each
    agent's model (or adapter's command), HANDRAIL_SECRET_KEY, the address (its listening
    sockets, returned), the upload folder and the database (`_open_store`). The first that
    fails raises `ConfigError` with every socket closed, having started nothing of the app."""
    from .connections.secrets import SecretBox
    from .server.serving import listen

    config.check_models()
    SecretBox.from_env()
    sockets = listen(config.host, config.port)
    try:
        _open_store(config, log_level, settings=settings)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _open_store(config: ServerConfig, log_level: str, *, settings: bool) -> None:
    """Open the configured database once and bring its schema up to date (logging what it
    does), and check that the upload folder can be made and written, before the server
    starts: a database that cannot be opened or that a newer handrail made, or an upload folder
    that cannot be used, stops the command with why (a `ConfigError`; with `settings`, the
    setting to change on a line of its own) instead of a traceback in the server's start-up or
    a failed upload later. The app's own start then finds the schema current."""
    import asyncio
    import logging.config

    from .errors import ConfigError, DatabaseUnavailable
    from .server.serving import log_config
    from .store import Store, local_blobs

    logging.config.dictConfig(log_config(log_level))

    def said(exc: ConfigError, setting: str) -> ConfigError:
        return ConfigError(f"{exc}\n  ({setting})" if settings else str(exc))

    blobs = local_blobs(config.database_url, config.blob_dir)
    try:
        blobs.check()  # first: it changes nothing but the folder it makes
    except ConfigError as exc:
        where = "the upload folder is the config's blob_dir, or HANDRAIL_BLOB_DIR"
        raise said(exc, where) from None

    async def open_and_close() -> None:
        store = await Store.open(
            config.database_url,
            blobs=blobs,
            synchronous=config.sqlite_synchronous,
            wait_s=config.database_wait,
        )
        await store.close()

    try:
        asyncio.run(open_and_close())
    except DatabaseUnavailable as exc:
        where = "the database is the config's database_url, or HANDRAIL_DATABASE_URL"
        raise said(exc, where) from None


def _has_display() -> bool:
    """Whether a browser window can open: always on macOS and Windows, and on other systems
    when X11 or Wayland is there."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _run_demo(args: argparse.Namespace) -> int:
    # Imported here so that other commands never pay for the server's dependencies.

    from .demo.app import create_demo_app, demo_config
    from .errors import ConfigError
    from .server.serving import Server, uvicorn_config

    database: Path = args.database
    sockets: list[socket.socket] = []
    try:
        config = demo_config(database, host=args.host, port=args.port)
        # A demo already running on the port stops this one before it opens the database.
        sockets = _ready_to_serve(config, args.log_level, settings=False)
        app = create_demo_app(database, config=config)
    except (ConfigError, OSError) as exc:
        for sock in sockets:
            sock.close()
        print(f"handrail demo: {exc}", file=sys.stderr)
        return 2

    url = f"http://{config.host}:{config.port}/"
    ai = "an AI model" if config.model != "scripted" else "a deterministic script, not AI"
    lines = [
        f"handrail demo: {url}",
        f"  model:    {config.model} ({ai})",
        f"  database: {database}",
        "  users (sign in with a button on the page, or with the token):",
    ]
    for user in config.users:
        admin = "  (admin)" if user.admin else ""
        lines.append(f"    {user.id:<6} token {user.token}{admin}")
    print("\n".join(lines), flush=True)

    server = Server(uvicorn_config(app, config, log_level=args.log_level))
    if args.browser and _has_display():
        threading.Thread(target=_open_when_started, args=(server, url), daemon=True).start()
    server.run(sockets=sockets)
    return 0 if server.started else 1


def _open_when_started(server: object, url: str) -> None:
    import time
    import webbrowser

    for _ in range(300):
        if getattr(server, "started", False):
            webbrowser.open(url)
            return
        if getattr(server, "should_exit", False):
            return
        time.sleep(0.1)


def _add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the web UI with the demo agent, and open the browser",
        description=(
            "Run the web UI and the demo agent (notes tools, a plan picker, clarify) on a "
            "SQLite file in a local folder, with the users alice, bob and admin (an admin), "
            "whose tokens demo-alice, demo-bob and demo-admin are printed and offered as "
            "sign-in buttons. The model is HANDRAIL_MODEL, or the scripted model (not AI) "
            "with a playbook of plain-language prompts."
        ),
    )
    parser.add_argument(
        "--database",
        type=Path,
        default=Path("handrail-demo") / "handrail.db",
        metavar="PATH",
        help="the SQLite file (default: ./handrail-demo/handrail.db; uploads go beside it)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=_port, default=8000, help="the port (default: 8000)")
    parser.add_argument(
        "--no-browser",
        dest="browser",
        action="store_false",
        help="do not open the browser",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="the log level of the server's lines, uvicorn's and handrail's (default: warning)",
    )
    parser.set_defaults(run=_run_demo)


def _run_check(args: argparse.Namespace) -> int:
    # Imported here so that other commands never pay for modules they do not use.
    from .actions import ActionConfigError, load_action_set
    from .errors import ConfigError

    status = 0
    for file in args.files:
        try:
            action_set = load_action_set(file)
        except ActionConfigError as exc:
            for problem in exc.problems:
                print(f"{file}: {problem}")
            status = max(status, 1)
            continue
        except ConfigError as exc:
            print(f"handrail check: {exc}", file=sys.stderr)
            status = 2
            continue
        count = len(action_set.tools)
        print(f"OK {file}: {count} tool{'' if count == 1 else 's'}")
    return status


def _add_check(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "check",
        help="compile action-set files and print every problem",
        description=(
            "Compile each HTTP action-set YAML file as the server would at start-up. Prints "
            "'OK <file>: <n> tools', or every problem as '<file>: <path>: <CODE>: <message>'. "
            "Secrets are looked up in the environment. Exits 1 when a file has a problem, 2 "
            "when a file cannot be read."
        ),
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="an action-set file")
    parser.set_defaults(run=_run_check)


def _run_catalog_check(args: argparse.Namespace) -> int:
    from .connections.catalog import CATALOG_DIR, load_folder

    folders: list[Path] = list(args.dirs) or [CATALOG_DIR]
    status = 0
    for folder in folders:
        definitions, problems = load_folder(folder)
        for problem in problems:
            print(problem)
            status = 1
        for definition in definitions:
            print(f"OK {definition.file}: {definition.slug} ({definition.kind})")
        if not problems and not definitions:
            print(f"{folder}: no app definitions (<slug>.yaml files)")
    return status


def _add_catalog(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "catalog",
        help="check the catalog of app definitions",
        description="Work with the catalog of app definitions (the apps connections are made "
        "from).",
    )
    # `handrail catalog` alone: this command's help, not the top-level one.
    parser.set_defaults(usage_of=parser)
    sub = parser.add_subparsers(title="commands", metavar="<command>")
    check = sub.add_parser(
        "check",
        help="check every app definition and print each problem",
        description=(
            "Check every app definition (<slug>.yaml) of each DIR (default: the shipped "
            "catalog) as the server does at start-up. Prints 'OK <file>: <slug> (<kind>)', or "
            "each problem as '<file>:<line>: <path>: <what is wrong>. Fix: <the fix>'. Exits 1 "
            "when a definition has a problem."
        ),
    )
    check.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="a folder of definitions")
    check.set_defaults(run=_run_catalog_check)


def _run_secret_key(args: argparse.Namespace) -> int:
    from .connections.secrets import SECRET_KEY_ENV, new_secret_key

    print(new_secret_key())
    print(f"Set {SECRET_KEY_ENV} to the key above; keep it safe.", file=sys.stderr)
    return 0


def _add_secret_key(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "secret-key",
        help="print a new key for HANDRAIL_SECRET_KEY",
        description="Print a new Fernet key, for HANDRAIL_SECRET_KEY: the key that encrypts "
        "the connections' secrets at rest.",
    )
    parser.set_defaults(run=_run_secret_key)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``handrail``, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="handrail",
        description="Put a person in the loop of an AI agent's tool calls.",
    )
    parser.add_argument("--version", action="version", version=f"handrail {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="<command>")
    _add_serve(commands)
    _add_demo(commands)
    _add_check(commands)
    _add_catalog(commands)
    _add_secret_key(commands)
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
        getattr(args, "usage_of", parser).print_help(sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
