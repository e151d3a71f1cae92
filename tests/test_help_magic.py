"""``%jaxscope`` / ``%jaxhelp``: every magic, pytest option and CLI command listed."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from IPython.utils.capture import capture_output

from jaxscope._ipython.magics import JaxscopeMagics


def _help(ip, name: str = "jaxscope") -> str:
    with capture_output() as captured:
        ip.run_cell(f"%{name}").raise_error()
    return captured.stdout


def _registered(ip) -> dict[str, object]:
    """Every magic a jaxscope ``Magics`` class registered, from IPython's registry."""
    names: dict[str, object] = {}
    for magics in ip.magics_manager.registry.values():
        if isinstance(magics, JaxscopeMagics):
            for kind, prefix in (("line", "%"), ("cell", "%%")):
                for name, method in magics.magics[kind].items():
                    names[prefix + name] = method
    return names


def test_every_registered_magic_has_its_line(ip):
    text = _help(ip)
    registered = _registered(ip)
    assert {"%jaxpr", "%hlo", "%%leaks", "%jaxscope", "%jaxhelp"} <= set(registered)
    listed = set(re.findall(r"^  (%%?\w+) ", text, re.M))
    assert listed == set(registered)
    for name, method in registered.items():
        parser = getattr(method, "parser", None)
        doc = getattr(parser, "description", None) or method.__doc__ or ""
        first_words = " ".join(doc.split()[:4])
        line = re.search(rf"^  {re.escape(name)} +(.*)$", text, re.M)
        assert line and line.group(1).startswith(first_words), (name, text)
    assert len(text.splitlines()) < 45  # one screen


def test_jaxhelp_is_the_same_list(ip):
    assert _help(ip, "jaxhelp") == _help(ip, "jaxscope")


def test_lists_every_pytest_option_pytest_itself_shows(ip):
    pytest_help = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:randomly"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flags = set(re.findall(r"^\s+(--jax-[\w-]+)", pytest_help, re.M))
    assert flags >= {"--jax-recompiles", "--jax-check-leaks"}
    text = _help(ip)
    assert set(re.findall(r"^  (--jax-[\w-]+)", text, re.M)) == flags


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "jaxscope", *args], capture_output=True, text=True
    )
    return done.stdout + done.stderr


def test_lists_the_command_line_and_its_options(ip):
    text = _help(ip)
    commands = re.search(r"\{([\w,]+)\}", _cli("--help"))
    assert commands
    for command in commands.group(1).split(","):
        assert f"  python -m jaxscope {command} " in text
    # `run` without a script prints its usage, with every option
    options = re.findall(r"\[(--[\w-]+)\]", _cli("run"))
    assert options
    for option in options:
        assert f"      {option}: " in text


@pytest.mark.parametrize("name", ["jaxscope", "jaxhelp"])
def test_help_magic_goes_away_on_unload(ipython_shell, name):
    ipython_shell.run_line_magic("load_ext", "jaxscope")
    ipython_shell.run_line_magic("unload_ext", "jaxscope")
    assert name not in ipython_shell.magics_manager.magics["line"]
