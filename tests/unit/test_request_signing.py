"""KIP-507 against Kafka Connect 4.3.1's own output (tests/data/kip507): the bytes signed, the signature header,
the session-key record, key sizes, setting checks, and the herder's rotation and verification decisions."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from starlette.datastructures import Headers

from sparklink.api.errors import BadRequestError, ConnectError, ForbiddenError
from sparklink.worker import request_signing as rs
from sparklink.worker.config import WorkerConfig, WorkerConfigError
from sparklink.worker.herder.internal_requests import task_configs_body
from sparklink.worker.herder.session_keys import INVALID, MISSING, NO_KEY_YET, SessionKeys
from sparklink.worker.storage.backend import MemoryBackend
from sparklink.worker.storage.config import ConfigStore, RestartRequest

VECTORS: dict[str, Any] = json.loads((Path(__file__).parents[1] / "data" / "kip507" / "vectors.json").read_text())


# ---------------------------------------------------------------------- signatures
@pytest.mark.parametrize("vector", VECTORS["signatures"], ids=lambda v: f"{v['algorithm']}-{len(v['body_hex'])}")
def test_the_signature_header_is_connects_byte_for_byte(vector: dict[str, str]) -> None:
    key, body = bytes.fromhex(vector["key_hex"]), bytes.fromhex(vector["body_hex"])
    headers = rs.signature_headers(key, body, vector["algorithm"])
    assert headers == {rs.SIGNATURE_HEADER: vector["signature"], rs.ALGORITHM_HEADER: vector["algorithm"]}


def test_connects_signatures_verify_and_a_changed_body_or_key_does_not() -> None:
    for vector in VECTORS["signatures"]:
        key, body = bytes.fromhex(vector["key_hex"]), bytes.fromhex(vector["body_hex"])
        # Header names in any case, as HTTP has them.
        sent = Headers(
            {
                "x-connect-authorization": vector["signature"],
                "X-CONNECT-REQUEST-SIGNATURE-ALGORITHM": vector["algorithm"],
            }
        )
        signature = rs.RequestSignature.from_headers(body, sent)
        assert signature is not None and signature.is_valid(key)
        tampered = rs.RequestSignature.from_headers(body + b" ", sent)
        assert tampered is not None and not tampered.is_valid(key)
        assert not signature.is_valid(bytes([key[0] ^ 1]) + key[1:])
        assert "signature=" not in repr(signature) and vector["signature"] not in repr(signature)


def test_a_request_without_both_headers_is_unsigned_and_bad_headers_are_connects_400() -> None:
    assert rs.RequestSignature.from_headers(b"[]", {rs.SIGNATURE_HEADER: "AAAA"}) is None
    assert rs.RequestSignature.from_headers(b"[]", {rs.ALGORITHM_HEADER: "HmacSHA256"}) is None
    with pytest.raises(BadRequestError, match=r"^Algorithm HmacSHA999 not available$"):
        rs.RequestSignature.from_headers(b"[]", {rs.SIGNATURE_HEADER: "AAAA", rs.ALGORITHM_HEADER: "HmacSHA999"})
    with pytest.raises(BadRequestError, match="base64"):
        rs.RequestSignature.from_headers(b"[]", {rs.SIGNATURE_HEADER: "no*base64", rs.ALGORITHM_HEADER: "HmacSHA256"})
    # java.util.Base64 takes a value without its padding.
    padded = VECTORS["signatures"][0]["signature"]
    signature = rs.RequestSignature.from_headers(
        b"", {rs.SIGNATURE_HEADER: padded.rstrip("="), rs.ALGORITHM_HEADER: "HmacSHA256"}
    )
    assert signature is not None and signature.signature == base64.b64decode(padded)


def test_the_task_configs_body_is_what_jacksons_object_mapper_writes() -> None:
    configs = [
        {"connector.class": "datagen", "topic": "café/漢字", "task.id": "0"},
        {"connector.class": "datagen", "quote": 'a "b" \\ c\n', "task.id": "1"},
    ]
    assert task_configs_body(configs) == VECTORS["jackson_task_configs"].encode("utf-8")


# ---------------------------------------------------------------------- the session-key record
class Heard:
    def __init__(self) -> None:
        self.keys: list[rs.SessionKey] = []

    def connector_changed(self, name: str, existed: bool, removed: bool) -> None: ...
    def tasks_committed(self, name: str) -> None: ...
    def target_state_changed(self, name: str) -> None: ...
    def restart_requested(self, request: RestartRequest) -> None: ...

    def session_key_updated(self, key: rs.SessionKey) -> None:
        self.keys.append(key)


def test_the_session_key_record_is_the_one_connect_writes_and_reads() -> None:
    for record in VECTORS["session_key_records"]:
        value = json.loads(record["value"])
        key = rs.SessionKey(base64.b64decode(value["key"]), value["algorithm"], value["creation-timestamp"])
        backend = MemoryBackend()
        ConfigStore(backend).put_session_key(key)
        assert backend.records == [(record["key"].encode(), record["value"].encode())]
        assert record["timestamp_reads_as"] == "Long"
        # Connect's own bytes, replayed by a worker that starts later.
        replayed = MemoryBackend()
        replayed.records.append((b"session-key", record["value"].encode()))
        store, heard = ConfigStore(replayed), Heard()
        store.listener = heard
        store.start()
        assert store.session_key() == key and heard.keys == [key]
        assert base64.b64encode(key.key).decode() not in repr(key)


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"[1]",
        b'{"algorithm":"HmacSHA256","creation-timestamp":1}',
        b'{"key":"AAAA","algorithm":"HmacSHA256","creation-timestamp":"1"}',
        b'{"key":"no*","algorithm":"HmacSHA256","creation-timestamp":1}',
    ],
)
def test_a_session_key_record_connect_would_not_read_is_ignored(value: bytes | None) -> None:
    backend = MemoryBackend()
    good = VECTORS["session_key_records"][0]["value"].encode()
    backend.records += [(b"session-key", good), (b"session-key", value)]
    store = ConfigStore(backend)
    store.start()
    session_key = store.session_key()
    assert session_key is not None and session_key.created_ms == 1729820000123


# ---------------------------------------------------------------------- algorithms and key sizes
@pytest.mark.parametrize("name", [n for n in VECTORS["key_generators"] if "error" not in VECTORS["key_generators"][n]])
def test_key_lengths_are_the_jvms(name: str) -> None:
    java = VECTORS["key_generators"][name]
    assert rs.key_length(name, None) == java["default_bytes"]
    key = rs.generate(rs.Settings(key_algorithm=name), 7)
    assert (len(key.key), key.algorithm, key.created_ms) == (java["default_bytes"], java["key_algorithm"], 7)
    for bits, outcome in java["init"].items():
        if outcome.startswith("ok "):
            assert rs.key_length(name, int(bits)) == int(outcome.removeprefix("ok ")), bits
        else:
            with pytest.raises(ValueError) as refused:
                rs.key_length(name, int(bits))
            assert str(refused.value).endswith(outcome.split(": ", 1)[1]), bits


def test_mac_names_are_the_jvms() -> None:
    for name, outcome in VECTORS["macs"].items():
        if outcome.startswith("ok "):
            canonical = rs.canonical_mac(name)
            assert len(rs.mac(b"k" * 32, b"body", canonical)) == int(outcome.rsplit(" ", 1)[1])
        else:
            with pytest.raises(rs.UnknownAlgorithmError) as unknown:
                rs.canonical_mac(name)
            assert str(unknown.value) == outcome.split(": ", 1)[1]
    with pytest.raises(rs.UnknownAlgorithmError, match=r"^NoSuchAlg KeyGenerator not available$"):
        rs.canonical_key_algorithm("NoSuchAlg")


@pytest.mark.parametrize("check", VECTORS["config_checks"], ids=lambda c: f"{c['setting']}={c['value']}")
def test_inter_worker_settings_are_refused_with_connects_messages(check: dict[str, str]) -> None:
    props = {"sparklink.worker.mode": "distributed", check["setting"]: check["value"]}
    if check["message"] == "ok":
        WorkerConfig.from_properties(None, props)
        return
    with pytest.raises(WorkerConfigError) as refused:
        WorkerConfig.from_properties(None, props)
    # Connect then lists the JVM's algorithms; sparklink lists the ones it implements.
    expected = check["message"].split(" by this JVM")[0]
    assert expected in str(refused.value)
    # A standalone worker has no internal requests, and does not read these settings (as Connect's).
    WorkerConfig.from_properties(None, {check["setting"]: check["value"]})


# ---------------------------------------------------------------------- the herder's decisions
class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def keys(clock: Clock, **settings: Any) -> SessionKeys:
    return SessionKeys(rs.Settings(**settings), clock)


def test_the_leader_distributes_a_key_when_none_expired_or_settings_changed() -> None:
    clock = Clock()
    session = keys(clock, ttl_ms=1000)
    assert session.due() == "no session key has been distributed yet"
    first = session.new_key()
    assert len(first.key) == 32 and first.algorithm == "HmacSHA256" and first.created_ms == clock.now
    session.update(first)  # read back from the config topic
    assert session.due() is None and session.seconds_to_expiry() == 1.0
    clock.now += 999
    assert session.due() is None
    clock.now += 1
    assert session.due() == "the session key has expired"
    session.new_key()  # written: no second key until it is read back
    assert session.due() is None and session.current == first
    session.retry_later()  # the write failed
    assert session.due() == "the session key has expired"
    session.update(rs.generate(rs.Settings(), clock.now))
    assert session.due() is None
    assert keys(clock, key_size=512).due() is not None
    resized = keys(clock, key_size=512)
    resized.update(first)
    assert (
        resized.due() == "the session key was made with another algorithm or size than this worker's settings ask for"
    )
    never = keys(clock, ttl_ms=0)
    never.update(first)
    clock.now += 10**12
    assert never.due() is None and never.seconds_to_expiry() is None


def status_of(call: Any) -> tuple[int, str]:
    try:
        call()
    except ConnectError as exc:
        return exc.status, exc.message
    return 204, ""


def test_internal_requests_are_accepted_only_when_signed_by_the_current_key() -> None:
    clock = Clock()
    session = keys(clock, verification_algorithms=("HmacSHA256", "HmacSHA512"))
    body = b'[{"task.id":"0"}]'
    old, new = rs.generate(session.settings, 1), rs.generate(session.settings, 2)

    def signed(key: rs.SessionKey, algorithm: str = "HmacSHA256", over: bytes = body) -> rs.RequestSignature:
        found = rs.RequestSignature.from_headers(body, rs.signature_headers(key.key, over, algorithm))
        assert found is not None
        return found

    assert status_of(lambda: session.verify(None)) == (400, MISSING)
    assert status_of(lambda: session.verify(signed(old))) == (503, NO_KEY_YET)
    session.update(old)
    assert status_of(lambda: session.verify(signed(old))) == (204, "")
    assert status_of(lambda: session.verify(signed(old, "HmacSHA512"))) == (204, "")
    code, message = status_of(lambda: session.verify(signed(old, "HmacSHA1")))
    assert code == 400 and message.startswith(
        "This worker does not support the 'HmacSHA1' key signing algorithm used by other workers. This worker is "
        "currently configured to use: [HmacSHA256, HmacSHA512]."
    )
    assert status_of(lambda: session.verify(signed(old, over=b"[]"))) == (403, INVALID)
    session.update(new)  # rotated: the old key is worth nothing now
    assert status_of(lambda: session.verify(signed(old))) == (403, INVALID)
    assert status_of(lambda: session.verify(signed(new))) == (204, "")
    assert ForbiddenError.status == 403
    assert session.sign(body) == rs.signature_headers(new.key, body, "HmacSHA256")
    assert keys(clock).sign(body) == {}
