"""Shell completion (bash, zsh, fish) by argcomplete, which completes from the parser itself.

argcomplete is imported only when a shell asks for completions or for its script, so that an
ordinary run pays nothing for it. A group of generated commands is built before completing
when the line names it (argcomplete reads a parser's commands as it walks the line, before the
group would build them).
"""

from __future__ import annotations

import argparse
import os

from ._arguments import PROG, Parser
from ._profiles import profile_names

#: What a shell's completion function sets while it asks for completions.
_ASKING = "_ARGCOMPLETE"


def _profiles(**_: object) -> list[str]:
    return profile_names()


def complete_if_asked(parser: argparse.ArgumentParser) -> None:
    """Answer the shell and exit when it asks for completions; else return at once."""
    if _ASKING not in os.environ:
        return
    import argcomplete

    line = os.environ.get("COMP_LINE", "")
    _build_named_groups(parser, line[: int(os.environ.get("COMP_POINT") or len(line))])
    for action in _options(parser):
        if "--profile" in action.option_strings:
            # argcomplete reads the completer from the action.
            setattr(action, "completer", _profiles)  # noqa: B010
    argcomplete.autocomplete(parser)


def _build_named_groups(parser: argparse.ArgumentParser, line: str) -> None:
    """Build the commands of each group the command line names (none else)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word in line.split():
                group = action.choices.get(word)
                if isinstance(group, Parser):
                    group.complete()


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every action of the parser and of its commands, however deep."""
    found = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _options(sub)
    return found


def script(shell: str) -> str:
    """The completion script of ``txc-async`` for ``shell``."""
    from argcomplete.shell_integration import shellcode

    return shellcode([PROG], shell=shell)
