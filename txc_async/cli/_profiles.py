"""Where the command line finds credentials and settings: a profile of the configuration file,
and the environment.

``$XDG_CONFIG_HOME/txc-async/config.toml`` (else ``~/.config/txc-async/config.toml``) holds
tables ``[profiles.NAME]``. The environment wins over the ``default`` profile; a profile named
with ``--profile`` is used as it is, and the ``TXC_*`` variables it set aside are named on
stderr before anything is sent. Secrets are never taken as arguments (any user of the machine
can read those in the process list), and a file holding one (a limiter URL with a password
among them) that others can read is refused.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from txc_async._secrets import url_secrets

from ._arguments import PROG, UsageError

#: The keys of a profile, each with the environment variable that wins over the default
#: profile's value.
ENVIRONMENT = {
    "api_key": "TXC_API_KEY",
    "api_secret": "TXC_API_SECRET",
    "base_url": "TXC_BASE_URL",
    "limiter": "TXC_LIMITER",
    "oauth_client_id": "TXC_OAUTH_CLIENT_ID",
    "oauth_client_secret": "TXC_OAUTH_CLIENT_SECRET",
    "oauth_refresh_token": "TXC_OAUTH_REFRESH_TOKEN",
}
#: Keys whose value no other user of the machine may read.
SECRETS = frozenset({"api_secret", "oauth_client_secret", "oauth_refresh_token"})
#: Keys holding a URL that may carry a secret (a password, a token): secret when it does.
SECRET_URLS = frozenset({"limiter"})
#: The profile used when none is named and the file has one by this name.
DEFAULT_PROFILE = "default"


class ConfigError(Exception):
    """The configuration file cannot be used: exit status 1, nothing sent."""


@dataclass(frozen=True)
class Settings:
    """Everything a command may need to reach the service; None where nothing set it."""

    api_key: str | None = None
    api_secret: str | None = None
    base_url: str | None = None
    limiter: str | None = None
    oauth_client_id: str | None = None
    oauth_client_secret: str | None = None
    oauth_refresh_token: str | None = None
    #: The profile the values not in ``from_environment`` come from (named with
    #: ``--profile``, or the default profile of the file); None when no profile was read.
    profile: str | None = None
    #: Whether ``profile`` was named with ``--profile`` (used as it is, no variable read).
    named: bool = False
    #: The configuration file (whether it exists or not).
    path: Path | None = None
    #: The keys whose value the environment gave (``TXC_*``), not the profile.
    from_environment: frozenset[str] = field(default_factory=frozenset)

    def __repr__(self) -> str:
        # Never a secret, nor the key: only which values are set.
        shown = ", ".join(f"{key}=set" for key in ENVIRONMENT if getattr(self, key))
        return f"Settings({shown})"

    def source(self, key: str) -> str:
        """Where the value of ``key`` comes from, or would be put: its variable, or the
        profile's key."""
        if key in self.from_environment or self.profile is None:
            return ENVIRONMENT[key]
        return f"{key} of [profiles.{self.profile}] in {self.path}"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The configuration file: under ``$XDG_CONFIG_HOME``, else ``~/.config``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "txc-async" / "config.toml"


def load_settings(
    profile: str | None, env: Mapping[str, str] | None = None, notes: TextIO | None = None
) -> Settings:
    """The settings of ``profile`` (or of the ``default`` profile when the file has one).

    Without ``profile``, every environment variable that is set wins over the default
    profile's value. A profile named with ``--profile`` wins over the environment: it is used
    as it is (a value it leaves out is not filled in from a variable, so that a sandbox's
    ``TXC_BASE_URL`` never sends a profile's orders elsewhere), and the variables it set aside
    are named in one line on ``notes`` (stderr), before the command sends anything."""
    env = os.environ if env is None else env
    path = config_path(env)
    values = _profile_values(profile, path)
    used = profile if profile is not None else (DEFAULT_PROFILE if values else None)
    if profile is not None:
        ignored = [variable for key, variable in ENVIRONMENT.items()
                   if env.get(variable) and env[variable] != values.get(key)]
        if ignored:
            print(f"{PROG}: note: --profile {profile} is used as it is: "
                  f"{', '.join(ignored)} set in the environment "
                  f"{'is' if len(ignored) == 1 else 'are'} ignored",
                  file=sys.stderr if notes is None else notes)
        return _settings(values, profile=used, named=True, path=path)
    from_environment = set()
    for key, variable in ENVIRONMENT.items():
        if env.get(variable):
            values[key] = env[variable]
            from_environment.add(key)
    return _settings(values, profile=used, named=False, path=path,
                     from_environment=frozenset(from_environment))


def _settings(
    values: Mapping[str, str], *, profile: str | None, named: bool, path: Path,
    from_environment: frozenset[str] = frozenset(),
) -> Settings:
    get = values.get
    return Settings(
        api_key=get("api_key"), api_secret=get("api_secret"), base_url=get("base_url"),
        limiter=get("limiter"), oauth_client_id=get("oauth_client_id"),
        oauth_client_secret=get("oauth_client_secret"),
        oauth_refresh_token=get("oauth_refresh_token"),
        profile=profile, named=named, path=path, from_environment=from_environment,
    )


def missing_credentials(settings: Settings, command: str) -> ConfigError | None:
    """What is wrong with the API key and secret of ``settings`` for ``command``, which needs
    them, as a message naming where to put them; None when both are there. Neither value is
    ever quoted."""
    if settings.api_key and settings.api_secret:
        return None
    path = settings.path or config_path()
    if settings.api_key or settings.api_secret:
        have, lack = (("api_key", "api_secret") if settings.api_key
                      else ("api_secret", "api_key"))
        if settings.profile is None or have in settings.from_environment:
            problem = f"{ENVIRONMENT[have]} is set but {ENVIRONMENT[lack]} is not"
            fix = (f"set {ENVIRONMENT[lack]} as well, or unset {ENVIRONMENT[have]} and give "
                   f"--profile NAME of a [profiles.NAME] table in {path}")
        else:
            problem = f"[profiles.{settings.profile}] in {path} has {have} but no {lack}"
            fix = f"add {lack} to it" + ("" if settings.named else
                                          " (or set TXC_API_KEY and TXC_API_SECRET)")
        return ConfigError(f"{command}: {problem} (the key and its secret go together): {fix}; "
                           "nothing was sent")
    if settings.named:
        return ConfigError(
            f"{command} needs an API key: [profiles.{settings.profile}] in {path} has no "
            "api_key and api_secret; add them there, or give another --profile; nothing was sent"
        )
    return ConfigError(
        f"{command} needs an API key: set TXC_API_KEY and TXC_API_SECRET, or give --profile "
        f"NAME (a [profiles.NAME] table with api_key and api_secret in {path}); nothing was "
        "sent"
    )


def _profile_values(profile: str | None, path: Path) -> dict[str, str]:
    if not path.exists():
        if profile is not None:
            raise UsageError(f"--profile {profile}: there is no configuration file {path}")
        return {}
    profiles = _read_profiles(path)
    if profile is None:
        return dict(profiles.get(DEFAULT_PROFILE, {}))
    if profile not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UsageError(f"--profile {profile}: {path} has no [profiles.{profile}] "
                         f"(profiles there: {known})")
    return dict(profiles[profile])


def profile_names(env: Mapping[str, str] | None = None) -> list[str]:
    """The profiles of the configuration file (for completion); none when it cannot be read."""
    try:
        return sorted(_read_profiles(config_path(env)))
    except (ConfigError, OSError):
        return []


def _read_profiles(path: Path) -> dict[str, dict[str, str]]:
    import tomllib

    try:
        with path.open("rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            document = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    profiles = document.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"{path}: 'profiles' must be a table of [profiles.NAME] tables")
    checked = {name: _check_profile(path, name, table) for name, table in profiles.items()}
    holds_secret = any(
        is_secret(key, value) for table in checked.values() for key, value in table.items()
    )
    if holds_secret and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{path} holds a secret and other users of this machine can read it "
            f"(mode {stat.S_IMODE(mode):o}); run: chmod 600 {path}"
        )
    return checked


def is_secret(key: str, value: str) -> bool:
    """Whether a profile's ``key`` holding ``value`` is a secret: a secret key, or a URL with
    a password or a token in it (``redis://:PASSWORD@host``)."""
    return key in SECRETS or (key in SECRET_URLS and bool(url_secrets(value)))


def _check_profile(path: Path, name: str, table: object) -> dict[str, str]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [profiles.{name}] must be a table")
    for key, value in table.items():
        if key not in ENVIRONMENT:
            raise ConfigError(f"{path}: [profiles.{name}] has an unknown key {key!r} "
                              f"(known: {', '.join(ENVIRONMENT)})")
        if not isinstance(value, str) or not value:
            # The value is not quoted: it may be a secret.
            raise ConfigError(f"{path}: [profiles.{name}] {key} must be a non-empty string")
    return dict(table)


def save_value(path: Path, profile: str, key: str, value: str) -> None:
    """Set ``key`` of ``[profiles.PROFILE]`` to ``value`` in the configuration file ``path``,
    where that profile already holds the key: only that value changes (comments, order and
    every other value kept), checked by reading the result back before it replaces the file.
    The file is replaced at once (a new file in the same directory, then renamed over it),
    with the old file's mode. Raises `ConfigError` (the file left as it was) when the key
    cannot be found as one line ``key = "..."`` of the profile's table; never quotes a value."""
    import tomllib

    target = path.resolve()  # a link to the file keeps pointing at it
    text = target.read_text(encoding="utf-8")
    before = tomllib.loads(text)
    lines = text.splitlines(keepends=True)
    index = _value_line(lines, profile, key)
    if index is None:
        raise ConfigError(f"{path}: no line {key} = \"...\" in [profiles.{profile}] to save "
                          "the new value on")
    line = lines[index]
    indent = line[: len(line) - len(line.lstrip())]
    ending = "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else ""
    lines[index] = f"{indent}{key} = {_basic_string(value)}{ending}"
    updated = "".join(lines)
    expected = before
    expected["profiles"][profile][key] = value
    try:
        same = tomllib.loads(updated) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise ConfigError(f"{path}: {key} of [profiles.{profile}] is not written as one line "
                          f"{key} = \"...\": the new value cannot be saved there")
    _replace(target, updated)


_HEADER = re.compile(r"\s*\[\s*(?P<table>[^\[\]#]+?)\s*\]\s*(?:#.*)?")


def _value_line(lines: list[str], profile: str, key: str) -> int | None:
    """The index of the line ``key = ...`` in the table ``[profiles.PROFILE]``, if any."""
    wanted = {f"profiles.{profile}", f'profiles."{profile}"', f"profiles.'{profile}'"}
    assignment = re.compile(rf"\s*{re.escape(key)}\s*=")
    inside = False
    for index, line in enumerate(lines):
        header = _HEADER.fullmatch(line.rstrip("\r\n"))
        if header is not None:
            inside = re.sub(r"\s*\.\s*", ".", header["table"]) in wanted
        elif inside and assignment.match(line):
            return index
    return None


def _basic_string(value: str) -> str:
    """``value`` as a TOML basic string."""
    escaped = []
    for char in value:
        if char in ('"', "\\"):
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _replace(target: Path, text: str) -> None:
    """Write ``text`` to a new file beside ``target``, with its mode, and rename it over
    ``target``: a reader sees the old file or the new one, never a part of either."""
    import tempfile

    mode = stat.S_IMODE(target.stat().st_mode)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            os.fchmod(stream.fileno(), mode)
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself, on disk
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
