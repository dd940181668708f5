"""Offset alterations (KIP-875) as the connector and Connect's framework see them.

Source offsets must be JSON objects with string keys and primitive values (Connect's OffsetUtils);
the connector's own `alter_offsets` then accepts or refuses the request and says whether it applied
it itself, which picks the success message. Caller: the herder, only while the connector is STOPPED.
"""

from __future__ import annotations

from typing import Any

from sparklink.api.connector import Connector
from sparklink.api.errors import BadRequestError, ConnectError


def check(partition: Any, offset: Any) -> None:
    """Connect's OffsetUtils rules for one source entry: string keys and primitive values only."""
    for what, value in (("partition", partition), ("offset", offset)):
        if value is None and what == "offset":
            continue  # a null offset removes the partition
        if not isinstance(value, dict):
            raise BadRequestError(f"Source connector {what}s must be JSON objects, not {json_type(value)}")
        for key, item in value.items():
            if not isinstance(key, str):
                raise BadRequestError(f"Source connector {what} keys must be strings")
            if isinstance(item, dict | list):
                raise BadRequestError(
                    f"Source connector {what} values must be primitives (string, number, boolean or null); "
                    f"'{key}' is {json_type(item)}"
                )


def json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def connector_alter(cls: type[Connector], name: str, config: dict[str, str], offsets: list[tuple[Any, Any]]) -> bool:
    """Ask the connector; True if it applied the change itself. Its refusals become 400s."""
    try:
        return bool(cls().alter_offsets(config, offsets))
    except NotImplementedError:
        raise ConnectError(
            f"Failed to modify offsets for connector {name} because it doesn't support external modification of offsets"
        ) from None
    except ValueError as exc:
        raise BadRequestError(str(exc)) from None


def success_message(verb: str, handled_by_connector: bool) -> str:
    """Connect's two texts (Worker#completeModifyOffsetsCallback); `verb` is altered or reset."""
    if handled_by_connector:
        return f"The offsets for this connector have been {verb} successfully"
    return (
        f"The Connect framework-managed offsets for this connector have been {verb} successfully. However, if "
        f"this connector manages offsets externally, they will need to be manually {verb} in the system that "
        "the connector uses."
    )
