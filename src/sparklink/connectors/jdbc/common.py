"""What both JDBC connectors share: connection settings, JDBC URL to libpq parameters, identifier quoting.

One `connection.url` (jdbc:postgresql://host[:port][,host2[:port2]]/database[?params]) serves both
drivers: Spark's JDBC reader/writer get it as is, with the PostgreSQL JDBC driver; psycopg gets the
libpq equivalent from `libpq_params`. URL parameters that libpq also knows (`user`, `password`,
`sslmode`, `ApplicationName`, `connectTimeout`, `options`) carry over; the rest concern only the JDBC
driver and are left to it. `connection.user` and `connection.password` win over the URL's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from sparklink.api import config as cfg

if TYPE_CHECKING:
    import psycopg

JDBC_PREFIX = "jdbc:postgresql:"
DRIVER = "org.postgresql.Driver"
# JDBC URL parameters with a libpq twin, by their JDBC name.
_LIBPQ_TWINS = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "ApplicationName": "application_name",
    "connectTimeout": "connect_timeout",
    "options": "options",
}


def _jdbc_url(_name: str, value: Any) -> str | None:
    try:
        libpq_params(str(value))
    except ValueError as exc:
        return str(exc)
    return None


CONNECTION_CONFIG = (
    cfg.ConfigDef()
    .key(
        "connection.url",
        "STRING",
        "JDBC connection URL, jdbc:postgresql://host[:port]/database.",
        importance="HIGH",
        validator=_jdbc_url,
        group="Connection",
    )
    .key("connection.user", "STRING", "JDBC connection user.", default=None, group="Connection")
    .key("connection.password", "PASSWORD", "JDBC connection password.", default=None, group="Connection")
)


@dataclass(frozen=True)
class Connection:
    url: str
    user: str | None = None
    password: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> Connection:
        parsed = CONNECTION_CONFIG.parse(config)
        return cls(parsed["connection.url"], parsed["connection.user"] or None, parsed["connection.password"])

    def libpq(self) -> dict[str, str]:
        """Keyword arguments for `psycopg.connect`; sessions run in UTC so timestamps compare as stored."""
        params = libpq_params(self.url)
        if self.user:
            params["user"] = self.user
        if self.password is not None:
            params["password"] = self.password
        params["options"] = (params.get("options", "") + " -c TimeZone=UTC").strip()
        return params

    def connect(self, autocommit: bool = True) -> psycopg.Connection[Any]:
        import psycopg

        return psycopg.connect(autocommit=autocommit, **self.libpq())  # type: ignore[arg-type]

    def spark_options(self) -> dict[str, str]:
        """Options for Spark's JDBC data source (the driver reads user and password from the URL otherwise)."""
        options = {"url": self.url, "driver": DRIVER}
        if self.user:
            options["user"] = self.user
        if self.password is not None:
            options["password"] = self.password
        return options


def libpq_params(url: str) -> dict[str, str]:
    """libpq connection parameters for a PostgreSQL JDBC URL; ValueError if it is not one."""
    if not url.startswith(JDBC_PREFIX):
        raise ValueError(f"expected a URL starting with {JDBC_PREFIX}")
    rest = url[len(JDBC_PREFIX) :]
    params: dict[str, str] = {}
    if rest.startswith("//"):
        split = urlsplit("postgresql:" + rest)
        hosts, host_ports = [], []
        for item in split.netloc.split(","):
            host, port = _host_port(item)
            hosts.append(host or "localhost")
            host_ports.append(port or "5432")
        params["host"], params["port"] = ",".join(hosts), ",".join(host_ports)
        database, query = unquote(split.path.lstrip("/")), split.query
    else:
        # jdbc:postgresql:database means the local server on the default port.
        database, _, query = rest.partition("?")
        params["host"], params["port"] = "localhost", "5432"
    if database:
        params["dbname"] = database
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in _LIBPQ_TWINS:
            params[_LIBPQ_TWINS[key]] = value
    return params


def _host_port(item: str) -> tuple[str, str]:
    if item.startswith("["):  # [IPv6]:port
        host, _, rest = item[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = item.partition(":")
    if port and not port.isdigit():
        raise ValueError(f"invalid port {port!r}")
    return host, port


def name_parts(name: str) -> list[str]:
    """A table name's parts: `schema.table` names a schema, as in Confluent's connector."""
    parts = name.split(".")
    if not all(parts):
        raise ValueError(f"invalid table name {name!r}")
    return parts


def quote_name(name: str) -> str:
    """The table name as quoted SQL (`"schema"."table"`), for Spark's `dbtable` and statements alike."""
    return ".".join(quote_ident(p) for p in name_parts(name))


def quote_ident(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'
