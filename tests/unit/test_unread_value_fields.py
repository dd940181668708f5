"""Which top-level value fields a sink's transforms let nobody read: JsonConverter leaves those out of its
parse, so a field counted here by mistake would lose data. Each case is a chain and the fields it drops
unread (or must not be counted)."""

from __future__ import annotations

import pytest

from sparklink.worker.transforms.pipeline import compile_pipeline

PKG = "org.apache.kafka.connect.transforms"
JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}


def _chain(*steps: tuple[str, dict[str, str]], **extra: str) -> dict[str, str]:
    config = {**JSON, "transforms": ",".join(f"t{i}" for i in range(len(steps))), **extra}
    for i, (cls, props) in enumerate(steps):
        config[f"transforms.t{i}.type"] = f"{PKG}.{cls}"
        config.update({f"transforms.t{i}.{k}": v for k, v in props.items()})
    return config


ROUTE = ("RegexRouter", {"regex": "bench-(.*)", "replacement": "$1"})
INSERT = ("InsertField$Value", {"static.field": "origin", "static.value": "bench"})
DROP_PAYLOAD = ("ReplaceField$Value", {"exclude": "payload", "renames": "seq:sequence"})


@pytest.mark.parametrize(
    ("config", "unread"),
    [
        pytest.param(
            _chain(ROUTE, INSERT, DROP_PAYLOAD), {"origin", "payload"}, id="bench chain: excluded and replaced fields"
        ),
        pytest.param(_chain(), set(), id="no transforms: the sink reads it all"),
        pytest.param(_chain(ROUTE, INSERT), {"origin"}, id="only the field an inserted one replaces"),
        pytest.param(
            _chain(("ReplaceField$Value", {"renames": "a:b"}), ("ReplaceField$Value", {"exclude": "b"})),
            {"a", "b"},
            id="renamed into a field dropped later, and the one it replaces",
        ),
        pytest.param(
            _chain(
                ("ReplaceField$Value", {"exclude": "payload"}),
                ("InsertField$Value", {"static.field": "payload", "static.value": "x"}),
            ),
            {"payload"},
            id="dropped, then inserted anew",
        ),
        pytest.param(
            _chain(("InsertField$Value", {"static.field": "payload", "static.value": "x"})),
            {"payload"},
            id="replaced by an inserted field",
        ),
        pytest.param(
            _chain(("InsertField$Value", {"partition.field": "p", "timestamp.field": "t"})),
            set(),
            id="partition and timestamp fields are inserted only where the record has one",
        ),
        pytest.param(
            _chain(("ValueToKey", {"fields": "payload"}), DROP_PAYLOAD),
            set(),
            id="read before it is dropped",
        ),
        pytest.param(
            _chain(DROP_PAYLOAD, ("ValueToKey", {"fields": "seq"})),
            {"payload"},
            id="a transform that reads the value after the drop",
        ),
        pytest.param(
            _chain(("ReplaceField$Key", {"exclude": "payload"})), set(), id="the key's field, not the value's"
        ),
        pytest.param(
            _chain(
                ("TimestampRouter", {}),
                ("InsertHeader", {"header": "h", "value.literal": "v"}),
                ("DropHeaders", {"headers": "g"}),
                DROP_PAYLOAD,
            ),
            {"payload"},
            id="routing and header edits before the drop read no field",
        ),
        pytest.param(
            _chain(("HeaderFrom$Value", {"fields": "payload", "headers": "p", "operation": "copy"}), DROP_PAYLOAD),
            set(),
            id="copied into a header before the drop",
        ),
        pytest.param(
            _chain(
                ("ReplaceField$Value", {"include": "a", "renames": "a:b"}), ("ReplaceField$Value", {"exclude": "b"})
            ),
            {"a", "b"},
            id="an include list: a name it drops counts where it is named; the kept one renamed into a dropped name",
        ),
        pytest.param(
            _chain(("ReplaceField$Value", {"include": "a", "renames": "a:b"})),
            set(),
            id="an include list's kept field, renamed, is read by the sink",
        ),
        pytest.param(
            _chain(
                DROP_PAYLOAD,
                **{
                    "transforms.t0.predicate": "p",
                    "predicates": "p",
                    "predicates.p.type": f"{PKG}.predicates.TopicNameMatches",
                    "predicates.p.pattern": "x.*",
                },
            ),
            set(),
            id="under a predicate: records it does not apply to keep the field",
        ),
    ],
)
def test_fields_a_sink_chain_drops_unread(config: dict[str, str], unread: set[str]) -> None:
    assert compile_pipeline(config, kind="sink").unread_value_fields == unread
