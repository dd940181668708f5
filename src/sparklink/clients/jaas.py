"""Reads `sasl.jaas.config`: one login module, its control flag and its options, as Kafka's JaasConfig does.

The grammar is `<LoginModuleClass> <flag> (<key>=<value>)*;` tokenized like java.io.StreamTokenizer with
Kafka's settings: values are double- or single-quoted strings (backslash escapes) or bare words; `//` and
`/* */` comments are skipped. A Kafka client takes exactly one login module. Errors never quote the text,
which holds a password. Caller: `security.ClientSecurity.from_properties`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["JaasEntry", "JaasSyntaxError", "parse"]

FLAGS = ("required", "requisite", "sufficient", "optional")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
# A word starts with a letter, '_', '$' or '-' and goes on with those, digits and '.' (StreamTokenizer with
# parseNumbers, as Kafka configures it: digits, '.' and '-' continue a word that a letter began).
_WORD = re.compile(r"[A-Za-z_$\-\u00a0-\u00ff][A-Za-z0-9_$.\-\u00a0-\u00ff]*")


class JaasSyntaxError(ValueError):
    """The text is not a JAAS entry; the message says where, never what."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: Mapping[str, str] = field(repr=False)


def parse(text: str) -> JaasEntry:
    tokens = list(_tokens(text))
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        kind, module = tokens[i]
        if kind != "word":
            raise JaasSyntaxError(f"expected a login module class name at token {i + 1}")
        if i + 1 >= len(tokens) or tokens[i + 1][0] != "word" or tokens[i + 1][1].lower() not in FLAGS:
            raise JaasSyntaxError(f"the login module needs a control flag ({', '.join(FLAGS)}) after its class name")
        flag = tokens[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i] != ("punct", ";"):
            kind, key = tokens[i]
            if kind != "word":
                raise JaasSyntaxError(f"expected an option name at token {i + 1}")
            if i + 2 >= len(tokens) or tokens[i + 1] != ("punct", "=") or tokens[i + 2][0] not in ("word", "quoted"):
                raise JaasSyntaxError(f"option '{key}' has no value (write {key}=\"...\")")
            options[key] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise JaasSyntaxError("the login module entry is not terminated by a semicolon")
        i += 1
        entries.append(JaasEntry(module, flag, options))
    if len(entries) != 1:
        raise JaasSyntaxError(f"a Kafka client takes exactly one login module; found {len(entries)}")
    return entries[0]


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasSyntaxError("a /* comment is not closed")
            i = end + 2
        elif c in "=;":
            yield "punct", c
            i += 1
        elif c in "\"'":
            value, i = _quoted(text, i)
            yield "quoted", value
        elif match := _WORD.match(text, i):
            yield "word", match.group()
            i = match.end()
        else:
            raise JaasSyntaxError(f"unexpected character at position {i + 1} (quote option values)")


def _quoted(text: str, start: int) -> tuple[str, int]:
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            octal = re.match(r"[0-7]{1,3}", text[i + 1 : i + 4])
            if octal:
                out.append(chr(int(octal.group(), 8) & 0xFF))
                i += 1 + len(octal.group())
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    raise JaasSyntaxError("a quoted value is not closed")
