"""``%jaxscope`` (alias ``%jaxhelp``): every magic, pytest option and CLI command on
one screen, read from the magics' docstrings, the plugins' ``pytest_addoption`` and
the CLI's parser, so the list cannot drift from what is there."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from IPython.core.magic import line_magic, magics_class

from jaxscope._ipython.magics import JaxscopeMagics, usage_errors

_WIDTH = 100


def _first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _entry(name: str, text: str, column: int) -> str:
    indent = " " * (column + 4)
    return textwrap.fill(
        f"  {name.ljust(column)}  {text}",
        _WIDTH,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def magic_lines(shell: Any) -> list[tuple[str, str]]:
    """``("%jaxpr", first docstring line)`` for every magic jaxscope registered."""
    found: dict[str, str] = {}
    for magics in shell.magics_manager.registry.values():
        if not isinstance(magics, JaxscopeMagics):
            continue
        for kind, prefix in (("line", "%"), ("cell", "%%")):
            for name, method in magics.magics.get(kind, {}).items():
                # magic_arguments puts the usage first in __doc__; the parser
                # keeps the docstring as written
                parser = getattr(method, "parser", None)
                doc = getattr(parser, "description", None) or method.__doc__
                found[prefix + name] = _first_sentence(doc)
    return sorted(found.items(), key=lambda item: item[0].lstrip("%"))


class _OptionRecorder:
    """Stands in for pytest's parser and option group: records ``addoption``."""

    def __init__(self) -> None:
        self.options: list[tuple[str, str]] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _OptionRecorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        choices = kwargs.get("choices")
        flag = names[0] + (f"={'|'.join(choices)}" if choices else "")
        self.options.append((flag, _first_sentence(kwargs.get("help"))))

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def pytest_option_lines() -> list[tuple[str, str]]:
    """``("--jax-recompiles=off|warn|fail", help)`` for every feature's pytest option."""
    from jaxscope._features import feature_modules

    recorder = _OptionRecorder()
    for module in feature_modules("plugin"):
        addoption = getattr(module, "pytest_addoption", None)
        if addoption is not None:
            addoption(recorder)
    return recorder.options


def cli_lines() -> list[str]:
    """Each CLI command's usage and what it does, then its options."""
    from jaxscope._cli import _parser

    lines: list[str] = []
    for action in _parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            usage = sub.format_usage().removeprefix("usage: ").strip()
            lines.append(f"  {usage}")
            lines.append(f"      {helps.get(name) or ''}".rstrip())
            for option in sub._actions:
                if option.option_strings and option.dest != "help":
                    lines.append(f"      {option.option_strings[0]}: {option.help}")
    return lines


def help_text(shell: Any) -> str:
    """The one-screen summary ``%jaxscope`` prints."""
    magics = magic_lines(shell)
    try:
        options = pytest_option_lines()
    except ImportError:  # pytest not installed: the plugin is inactive anyway
        options = []
    column = max(len(name) for name, _ in magics)
    out = ["jaxscope magics (%MAGIC --help for a magic's options):"]
    out += [_entry(name, text, column) for name, text in magics]
    if options:
        column = max(len(name) for name, _ in options)
        out += ["", "pytest options (pytest --help lists them under 'jaxscope'):"]
        out += [_entry(name, text, column) for name, text in options]
    out += ["", "command line (`jaxscope ...` is the same):", *cli_lines()]
    out += ["", "Python API: import jaxscope as js; help(js)"]
    return "\n".join(out)


@magics_class
class HelpMagics(JaxscopeMagics):
    @line_magic
    @usage_errors
    def jaxscope(self, line: str) -> None:
        """List jaxscope's magics, pytest options and command line, one line each."""
        print(help_text(self.running_shell))

    @line_magic
    @usage_errors
    def jaxhelp(self, line: str) -> None:
        """The same as %jaxscope: every magic, pytest option and CLI command."""
        print(help_text(self.running_shell))


MAGICS = HelpMagics
