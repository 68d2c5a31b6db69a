"""Session-wide test machinery.

typer's ``CliRunner.invoke(app, ...)`` turns the Typer app into its click command on every call
(``typer.main.get_command``: every verb's signature and type hints read again, about 0.1 s for
topo's 15 verbs and ~190 options), and the suite invokes the command line hundreds of times (310
in tests/test_cli.py and tests/test_cli_common.py alone). A user's process builds that command
once, in ``main``; here it is built once per app for the session, and every invocation parses,
runs and reports through the same command as before (click commands are stateless between
invocations: each gets a fresh context).
"""

from __future__ import annotations

import weakref
from typing import Any

import typer.testing

_build_command = typer.testing._get_command
_commands: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _command_once(app: Any) -> Any:
    command = _commands.get(app)
    if command is None:
        command = _commands[app] = _build_command(app)
    return command


typer.testing._get_command = _command_once
