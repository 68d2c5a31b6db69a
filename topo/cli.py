"""The ``topo`` command line: the typer app, assembled from :mod:`topo.commands`.

Each command parses its options, calls one library function and renders the result: a table
on the terminal, or one JSON object with ``--json``. Results go to stdout, diagnostics to
stderr. Every :class:`topo.errors.TopoError` is printed as one line with exit status 1
(:func:`topo.cli_common.user_errors`); usage errors as one line with exit status 2
(:func:`main`).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import sys
from typing import Annotated, Any

import typer

from topo import runtime
from topo.interrupts import redeliver_swallowed_interrupts

__all__ = ["app", "main"]

HELP_PIPE_WIDTH = 160
"""Columns of ``--help`` when stdout is piped or redirected and neither ``TERMINAL_WIDTH`` nor
``COLUMNS`` is set: rich would assume 80 and cut option names and help text to ``…``; a
terminal keeps its own width."""

if not sys.stdout.isatty() and not ({"TERMINAL_WIDTH", "COLUMNS"} & set(os.environ)):
    # typer reads TERMINAL_WIDTH as it imports its help renderer (typer.rich_utils, with
    # rich's markdown: 0.1 s), which a command that prints no help never loads
    if "typer.rich_utils" in sys.modules:
        setattr(sys.modules["typer.rich_utils"], "MAX_WIDTH", HELP_PIPE_WIDTH)  # noqa: B010
    else:
        os.environ["TERMINAL_WIDTH"] = str(HELP_PIPE_WIDTH)

_COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("build", "build"),
    "bandwidth": ("bandwidth", "bandwidth"),
    "plot": ("plot", "plot"),
    "collective": ("collective", "collective"),
    "explain": ("explain", "explain"),
    "acceptance": ("acceptance", "acceptance"),
    "cost": ("cost", "cost"),
    "plan": ("cost", "plan"),
    "moe": ("moe", "moe"),
    "resilience": ("resilience", "resilience"),
    "place": ("place", "place"),
    "export": ("export", "export_"),
    "validate": ("validate", "validate"),
    "catalog": ("catalog", "catalog"),
    "sweep": ("sweep", "sweep"),
    "codesign": ("codesign", "codesign"),
}
"""Each command (in the order of ``--help``): its module of :mod:`topo.commands` and its
function there. ``import ibnetdiscover`` is the one command of the ``import`` group."""


def _version(value: bool) -> None:
    if value:
        from topo import __version__

        print(f"topo {__version__}")
        raise typer.Exit()


def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Design and analyse the networks of large GPU clusters."""


def _command(name: str) -> Any:
    """The function of command ``name`` (its module imported now)."""
    module, function = _COMMANDS[name]
    return getattr(importlib.import_module(f"topo.commands.{module}"), function)


def _app(only: str | None = None) -> typer.Typer:
    """The typer app: every command, or (``only``) the one a process runs, whose options,
    help and errors are the same in both (the others' modules, with what they import, are
    then not loaded: 0.1-0.2 s of a command's start)."""
    new = typer.Typer(
        name="topo",
        help="Design and analyse the networks of large GPU clusters.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    new.callback()(_main)
    if only is None:
        import_app = typer.Typer(help="Import a real fabric dump.", no_args_is_help=True)
        new.add_typer(import_app, name="import")
        import_ = importlib.import_module("topo.commands.import_")
        import_app.command("ibnetdiscover")(import_.ibnetdiscover)
    for name in _COMMANDS if only is None else (only,):
        new.command(name)(_command(name))
    return new


app: typer.Typer  # (made by __getattr__ at its first use)


@functools.cache
def _full_app() -> typer.Typer:
    """The typer app of every command, made once."""
    return _app()


def __getattr__(name: str) -> Any:
    """``app``: the typer app of every command (made at its first use)."""
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LOOPS = {"resilience", "sweep", "codesign"}
"""The commands that run many analyses in one process (trials, points): their objects come
and go, so they are not frozen after each pause (:func:`topo.runtime.freeze_after_pauses`)."""


def main() -> None:
    """The console entry: the typer app, with usage errors (a missing file, a value out of
    range, an unknown option) as one ``topo: error:`` line and exit status 2.

    A command allocates a whole fabric at once (a 16,384-GPU MPFT is 100,000 dicts): Python's
    cyclic collector, run every 700 allocations by default, would traverse them again and again,
    so the command line runs it every 100,000 (cycles are still collected), and a command that
    makes one analysis keeps what it built in the pauses of the collector out of later
    collections (:func:`topo.runtime.configure_for_command`). When the command has
    finished, the process ends without tearing its objects down one by one (:func:`_finish`).
    """
    runtime.configure_for_command(one_analysis=not set(sys.argv[1:2]) & _LOOPS)
    redeliver_swallowed_interrupts()  # (a Ctrl-C raised in a gc callback is not lost)
    only = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] in _COMMANDS else None
    try:
        application = _app(only) if only is not None else _full_app()
        rc = application(standalone_mode=False)
    except KeyboardInterrupt:  # while typer builds the app, before a command can catch it
        print("topo: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        names = {k.__name__ for k in type(exc).__mro__}
        if "NoArgsIsHelpError" in names:  # bare ``topo`` or ``topo import``: the help
            print(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(2)
        if "UsageError" in names:
            ctx = getattr(exc, "ctx", None)
            where = f"{ctx.command_path}: " if ctx is not None else ""
            message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            # click takes an empty path for the current folder: "file '' is a directory"
            for empty in ("file '' is a directory", "File '' is a directory"):
                message = message.replace(empty, "an empty path names no file")
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            print(f"topo: error: {where}{message}{hint}", file=sys.stderr)
            sys.exit(2)
        if "Abort" in names:
            print("topo: interrupted", file=sys.stderr)
            sys.exit(130)
        raise
    _finish(rc if isinstance(rc, int) else 0)


def _finish(code: int) -> None:
    """Exit with ``code`` once the output is out: flush the streams, run the exit handlers
    (``atexit``: Dask clusters, temporary folders, logging), then end the process without
    freeing every object of the fabric (0.1-0.2 s on a 16,384-GPU one; the system reclaims
    the memory at once)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``topo ... | head``) or stream
            pass
    if code in _SIGNALLED:
        # ended by Ctrl-C or SIGTERM, its one line printed: an exit handler's complaint about
        # the work it cut short (Dask's, closing a cluster whose workers were still starting)
        # is not shown
        sys.unraisablehook = lambda unraisable: None
    atexit._run_exitfuncs()
    os._exit(code)


_SIGNALLED = {130, 143}
"""The exit statuses of a command ended by SIGINT (128 + 2) and SIGTERM (128 + 15)."""


if __name__ == "__main__":  # pragma: no cover - python -m topo.cli, as the console script
    main()
