"""Connect's converters (StringConverter, ByteArrayConverter, JsonConverter) and header converters, as
Spark SQL expressions. Caller: the pipeline (sinks convert after the Kafka read, sources before the
Kafka write) and HeaderFrom/InsertHeader (header values).

`to_connect(raw)` turns Kafka bytes into a Datum plus an error text expression (NULL when the
record converted); `from_connect(datum)` turns a Datum into bytes plus an error text expression. Differences from
Connect, all in the direction of accepting more: ByteArrayConverter writes text as UTF-8 and other
values as JSON (Connect raises "not compatible with objects of type ..."), StringConverter writes
objects as JSON (Connect writes Java's toString()), and JsonConverter sorts object keys.
"""

from __future__ import annotations

from typing import ClassVar

from sparklink.api import config as cfg
from sparklink.worker.transforms import exprs as x
from sparklink.worker.transforms import schemas
from sparklink.worker.transforms.plugin import Plugin, PluginConfigError, config, key
from sparklink.worker.transforms.record import Datum

TYPE_KEY = key(
    "converter.type",
    "STRING",
    "Which part of records the converter handles (key, value or header); set by the runtime.",
    importance="LOW",
    validator=cfg.one_of(["key", "value", "header"]),
)
CHARSETS = {"UTF8": "UTF-8", "UTF-8": "UTF-8", "US-ASCII": "US-ASCII", "ISO-8859-1": "ISO-8859-1"}
CHARSETS |= {"UTF-16": "UTF-16", "UTF-16BE": "UTF-16BE", "UTF-16LE": "UTF-16LE"}
DESERIALIZE_FAILED = "Converting byte[] to Kafka Connect data failed due to serialization error: "
ENVELOPE_REQUIRED = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional '
    "fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter "
    "configuration."
)


class Converter(Plugin):
    header_only: ClassVar[bool] = False

    def to_connect(self, raw: str, unread: frozenset[str] = frozenset()) -> tuple[Datum, str | None]:
        """`unread`: top-level fields of an object that nothing after the converter reads; a converter
        may leave them out."""
        raise NotImplementedError

    def from_connect(self, datum: Datum) -> tuple[str, str | None]:
        raise NotImplementedError

    def header_bytes(self, datum: Datum) -> str:
        """A header value's bytes, as this converter writes headers (fromConnectHeader)."""
        out, _error = self.from_connect(datum)
        return out


def _text(datum: Datum) -> str:
    """A Datum's text: strings as they are, bytes decoded as UTF-8, other values as JSON."""
    if datum.kind == "string":
        return datum.col
    if datum.kind == "binary":
        return x.utf8_text(datum.col)
    return x.string_of(datum.variant())


class StringConverter(Converter):
    class_name = "org.apache.kafka.connect.storage.StringConverter"
    doc = "Strings in the configured character set; objects are written as JSON text."
    CONFIG = config(
        TYPE_KEY,
        key(
            "converter.encoding",
            "STRING",
            "The Java character set name for encoding and decoding text (UTF8 by default).",
            default="UTF8",
            importance="HIGH",
        ),
    )

    def configure(self) -> None:
        name = str(self.config["converter.encoding"]).upper()
        if name not in CHARSETS:
            supported = ", ".join(sorted(CHARSETS))
            raise PluginConfigError(f"Unsupported charset {self.config['converter.encoding']}; use one of {supported}")
        self.charset = CHARSETS[name]

    def to_connect(self, raw: str, unread: frozenset[str] = frozenset()) -> tuple[Datum, str | None]:
        # Java replaces what a charset cannot read; Spark's decode raises, so UTF-8 (the default) is read
        # with replacement in SQL. The other charsets keep decode: of them, only US-ASCII and UTF-16
        # can meet bytes they cannot read.
        text = x.utf8_text(raw) if self.charset == "UTF-8" else f"decode({raw}, {x.text(self.charset)})"
        return Datum(text, "string", x.variant_of(schemas.primitive("string"))), None

    def from_connect(self, datum: Datum) -> tuple[str, str | None]:
        if datum.kind == "binary":
            return datum.col, None
        return f"encode({datum.json or _text(datum)}, {x.text(self.charset)})", None


class ByteArrayConverter(Converter):
    class_name = "org.apache.kafka.connect.converters.ByteArrayConverter"
    doc = "Bytes as they are; sparklink also writes text as UTF-8 and other values as JSON."
    CONFIG = config(TYPE_KEY)

    def to_connect(self, raw: str, unread: frozenset[str] = frozenset()) -> tuple[Datum, str | None]:
        return Datum(raw, "binary", x.variant_of({"type": "bytes", "optional": True})), None

    def from_connect(self, datum: Datum) -> tuple[str, str | None]:
        if datum.kind == "binary":
            return datum.col, None
        if datum.kind == "string":
            return f"encode({datum.col}, 'UTF-8')", None
        if datum.json is not None:
            return f"encode({datum.json}, 'UTF-8')", None
        value = datum.variant()
        as_bytes = x.when(f"{x.kind(value)} = 'BINARY'", f"try_variant_get({value}, '$', 'binary')")
        return f"coalesce({as_bytes}, encode({x.string_of(value)}, 'UTF-8'))", None


def _decimal_format(_name: str, value: object) -> str | None:
    return None if str(value).upper() in ("BASE64", "NUMERIC") else "String must be one of: BASE64, NUMERIC"


class JsonConverter(Converter):
    class_name = "org.apache.kafka.connect.json.JsonConverter"
    doc = 'JSON, with schemas.enable in Connect\'s {"schema": ..., "payload": ...} envelope.'
    CONFIG = config(
        TYPE_KEY,
        key(
            "schemas.enable",
            "BOOLEAN",
            "Wrap each key or value in an envelope carrying its Connect schema.",
            default=True,
            importance="HIGH",
        ),
        key(
            "schemas.cache.size",
            "INT",
            "Kept for compatibility; schemas are not cached.",
            default=1000,
            importance="HIGH",
        ),
        key(
            "decimal.format",
            "STRING",
            "How decimals are written: BASE64 (default) or NUMERIC, case insensitive.",
            default="BASE64",
            importance="LOW",
            validator=_decimal_format,
        ),
        key(
            "replace.null.with.default",
            "BOOLEAN",
            "Write a field's schema default in place of a null value.",
            default=True,
            importance="LOW",
        ),
    )

    @property
    def schemas_enabled(self) -> bool:
        return bool(self.config["schemas.enable"])

    def to_connect(self, raw: str, unread: frozenset[str] = frozenset()) -> tuple[Datum, str | None]:
        # Fields are left out of a bare value only: an envelope's are the payload's, one level down.
        parsed = x.json_variant(raw, () if self.schemas_enabled else unread)  # not UTF-8: malformed
        malformed = f"({raw} IS NOT NULL AND {parsed} IS NULL)"
        if not self.schemas_enabled:
            return Datum.of_variant(parsed), x.when(malformed, x.text(DESERIALIZE_FAILED))
        # The envelope's two fields are read where they lie: the payload is never copied into a map.
        schema, payload = x.object_get(parsed, "schema"), x.object_get(parsed, "payload")
        well_formed = f"coalesce({x.object_size(parsed)} = 2 AND {schema} IS NOT NULL AND {payload} IS NOT NULL, false)"
        error = x.case(
            (malformed, x.text(DESERIALIZE_FAILED)),
            (f"({parsed} IS NOT NULL AND NOT {well_formed})", x.text(ENVELOPE_REQUIRED)),
        )
        return Datum.of_variant(payload, x.when(f"NOT {x.is_null(schema)}", schema)), error

    def from_connect(self, datum: Datum) -> tuple[str, str | None]:
        payload = datum.json or f"to_json({datum.variant()})"
        if datum.json is None and datum.kind == "string":
            payload = x.json_string(datum.col)
        if not self.schemas_enabled:
            return x.json_bytes(payload), None
        schema = f"to_json({datum.schema})" if datum.schema is not None else "CAST(NULL AS STRING)"
        envelope = x.concat(
            """'{"schema":'""",
            f"coalesce({schema}, 'null')",
            """',"payload":'""",
            f"coalesce({payload}, 'null')",
            "'}'",
        )
        return x.when(f"isnotnull({datum.col}) OR isnotnull({schema})", x.json_bytes(envelope)), None


class SimpleHeaderConverter(Converter):
    class_name = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
    doc = "Header values as strings (objects as JSON text)."
    header_only = True
    CONFIG = config()

    def to_connect(self, raw: str, unread: frozenset[str] = frozenset()) -> tuple[Datum, str | None]:
        return Datum(x.utf8_text(raw), "string"), None

    def from_connect(self, datum: Datum) -> tuple[str, str | None]:
        if datum.kind == "binary":
            return datum.col, None
        return f"encode({_text(datum)}, 'UTF-8')", None


CONVERTERS: tuple[type[Converter], ...] = (StringConverter, ByteArrayConverter, JsonConverter)
HEADER_CONVERTERS: tuple[type[Converter], ...] = (
    SimpleHeaderConverter,
    StringConverter,
    ByteArrayConverter,
    JsonConverter,
)
