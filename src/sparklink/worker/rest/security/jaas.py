"""JAAS login configuration files, read as the JVM reads them for Connect's BasicAuthSecurityRestExtension.

Connect's scripts hand the JVM a JAAS file with `-Djava.security.auth.login.config=<file>` in
KAFKA_OPTS; the extension authenticates each request against its `KafkaConnect` entry:

    KafkaConnect {
        org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
        file="/etc/kafka/connect.credentials";
    };

The grammar is Java's (sun.security.provider.ConfigFile): entries `Name { Class Flag key=value ...; };`,
quoted or bare words, `//`, `/* */` and `#` comments. The same file often holds other entries with
passwords (KafkaClient, KafkaServer), so a parse error names a line, never a token. Caller: basic_auth.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sparklink.worker.rest.security.exceptions import RestSecurityError

PROPERTY = "java.security.auth.login.config"
FLAGS = ("required", "requisite", "sufficient", "optional")
TOKEN = re.compile(
    r"""(?P<skip>\s+|//[^\n]*|/\*.*?\*/|\#[^\n]*)
      | "(?P<quoted>(?:[^"\\]|\\.)*)"
      | (?P<punct>[{};=])
      | (?P<word>[^\s{};="]+)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class LoginModule:
    """One line of an entry: the module's class, its control flag and its options."""

    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Token:
    kind: str  # "word" (bare or quoted) or "punct"
    text: str
    line: int


def login_config(setting: str | None, environ: Mapping[str, str]) -> tuple[Path, str] | None:
    """The JAAS file and where it was named: the worker property, else `-D...=` in KAFKA_OPTS (the last wins)."""
    if setting:
        return Path(setting), f"the worker property {PROPERTY}"
    found: str | None = None
    # kafka-run-class.sh expands $KAFKA_OPTS unquoted: split at whitespace, quotes taken literally.
    for arg in environ.get("KAFKA_OPTS", "").split():
        if arg.startswith(f"-D{PROPERTY}="):
            # `==` asks the JVM to use this file alone rather than add it to others; it is one file either way.
            found = arg.split("=", 1)[1].lstrip("=")
    return (Path(found), f"-D{PROPERTY} in KAFKA_OPTS") if found else None


def read(path: Path) -> dict[str, list[LoginModule]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise RestSecurityError(f"Cannot read the JAAS file {path}: {reason}") from None
    return parse(text, str(path))


def parse(text: str, source: str = "the JAAS file") -> dict[str, list[LoginModule]]:
    """Every entry of a JAAS file by name; RestSecurityError names the line of a syntax error."""
    tokens = _tokens(text, source)
    entries: dict[str, list[LoginModule]] = {}
    position = 0

    def take(kind: str, text: str | None = None, what: str = "") -> _Token:
        nonlocal position
        if position >= len(tokens):
            raise RestSecurityError(f"{source} ends early: expected {what}")
        token = tokens[position]
        if token.kind != kind or (text is not None and token.text != text):
            raise RestSecurityError(f"{source}, line {token.line}: expected {what}")
        position += 1
        return token

    def peek(text: str) -> bool:
        return position < len(tokens) and tokens[position].kind == "punct" and tokens[position].text == text

    while position < len(tokens):
        name = take("word", what="an entry name")
        if name.text in entries:
            raise RestSecurityError(f"{source}, line {name.line}: a second entry named {name.text}")
        take("punct", "{", "'{' after the entry name")
        modules: list[LoginModule] = []
        while not peek("}"):
            class_name = take("word", what="a login module class")
            flag = take("word", what="a control flag (required, requisite, sufficient or optional)")
            if flag.text.lower() not in FLAGS:
                raise RestSecurityError(
                    f"{source}, line {flag.line}: the control flag must be required, requisite, sufficient or optional"
                )
            options: dict[str, str] = {}
            while not peek(";"):
                key = take("word", what="an option name or ';'")
                take("punct", "=", f"'=' after the option {key.text}")
                options[key.text] = take("word", what=f"a value for the option {key.text}").text
            take("punct", ";", "';'")
            modules.append(LoginModule(class_name.text, flag.text.lower(), options))
        take("punct", "}", "'}'")
        take("punct", ";", "';' after '}'")
        entries[name.text] = modules
    return entries


def _tokens(text: str, source: str) -> list[_Token]:
    out: list[_Token] = []
    position, line = 0, 1
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            raise RestSecurityError(f"{source}, line {line}: an unterminated quoted string or comment")
        if match.group("quoted") is not None:
            out.append(_Token("word", re.sub(r"\\(.)", r"\1", match.group("quoted")), line))
        elif match.group("punct") is not None:
            out.append(_Token("punct", match.group("punct"), line))
        elif match.group("word") is not None:
            out.append(_Token("word", match.group("word"), line))
        line += match.group(0).count("\n")
        position = match.end()
    return out
