"""KIP-507: the session key of a worker group and the signatures of its internal requests, as Connect makes them.

The leader generates a secret key (Java's KeyGenerator `inter.worker.key.generation.algorithm`, of
`inter.worker.key.size` bits or the algorithm's default) and distributes it through the config topic; a
worker signs each internal request with it. `X-Connect-Authorization` is the Base64 of the MAC
(`inter.worker.signature.algorithm`) over the request body's bytes exactly as sent (there is no canonical
form: the receiver computes the MAC over the bytes it received), and `X-Connect-Request-Signature-Algorithm`
names the MAC. The receiver accepts only the algorithms in `inter.worker.verification.algorithms` and
compares in constant time (Connect's InternalRequestSignature). Algorithm names are Java's, looked up
without regard to case, as the JVM looks them up.

Pure functions and tables only. Callers: WorkerConfig (validates the settings), the config store (the key
record), the herder (session_keys.py: when to rotate, what to accept) and the REST route of the internal
endpoint (reads the headers). A key is never logged or shown: the dataclasses hide it from repr.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparklink.api.errors import BadRequestError

SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
DEFAULT_ALGORITHM = "HmacSHA256"
DEFAULT_TTL_MS = 3_600_000  # one hour

# Java's Mac algorithms (SunJCE) -> hashlib's digest names.
MACS = {
    "HmacMD5": "md5",
    "HmacSHA1": "sha1",
    "HmacSHA224": "sha224",
    "HmacSHA256": "sha256",
    "HmacSHA384": "sha384",
    "HmacSHA512": "sha512",
    "HmacSHA512/224": "sha512_224",
    "HmacSHA512/256": "sha512_256",
    "HmacSHA3-224": "sha3_224",
    "HmacSHA3-256": "sha3_256",
    "HmacSHA3-384": "sha3_384",
    "HmacSHA3-512": "sha3_512",
}
# Java's KeyGenerator algorithms -> the default key size in bits (JDK 17, as measured with the 4.3.1 worker's JVM).
KEY_GENERATORS = {
    "HmacMD5": 512,
    "HmacSHA1": 512,
    "HmacSHA224": 224,
    "HmacSHA256": 256,
    "HmacSHA384": 384,
    "HmacSHA512": 512,
    "HmacSHA512/224": 224,
    "HmacSHA512/256": 256,
    "HmacSHA3-224": 224,
    "HmacSHA3-256": 256,
    "HmacSHA3-384": 384,
    "HmacSHA3-512": 512,
    "AES": 128,
}
AES_SIZES = (128, 192, 256)


class UnknownAlgorithmError(ValueError):
    """An algorithm name this worker has no implementation of; the message is Java's."""


@dataclass(frozen=True)
class SessionKey:
    """A key as the config topic carries it (`session-key`): its bytes, KeyGenerator algorithm and birth (ms)."""

    key: bytes = field(repr=False)
    algorithm: str
    created_ms: int


@dataclass(frozen=True)
class Settings:
    """The `inter.worker.*` settings of a distributed worker, checked as DistributedConfig checks them."""

    key_algorithm: str = DEFAULT_ALGORITHM
    key_size: int | None = None
    ttl_ms: int = DEFAULT_TTL_MS
    signature_algorithm: str = DEFAULT_ALGORITHM
    verification_algorithms: tuple[str, ...] = (DEFAULT_ALGORITHM,)

    def check(self) -> None:
        """ValueError with Connect's message for the first setting a worker could not run with."""
        if not 0 <= self.ttl_ms <= 2**31 - 1:  # ConfigDef.Range.between(0, Integer.MAX_VALUE)
            bound = "at least 0" if self.ttl_ms < 0 else f"no more than {2**31 - 1}"
            raise ValueError(
                f"Invalid value {self.ttl_ms} for configuration inter.worker.key.ttl.ms: Value must be {bound}"
            )
        check_key_algorithm("inter.worker.key.generation.algorithm", self.key_algorithm)
        check_mac("inter.worker.signature.algorithm", self.signature_algorithm)
        if not self.verification_algorithms:
            raise ValueError(
                "Invalid value [] for configuration inter.worker.verification.algorithms: At least one signature "
                "verification algorithm must be provided"
            )
        for algorithm in self.verification_algorithms:
            check_mac("inter.worker.verification.algorithms", algorithm)
        key_length(self.key_algorithm, self.key_size)
        if self.signature_algorithm not in self.verification_algorithms:
            raise ValueError(
                f"Invalid value {self.signature_algorithm} for configuration inter.worker.signature.algorithm: "
                "Signature algorithm must be present in inter.worker.verification.algorithms list"
            )


def canonical_mac(algorithm: str) -> str:
    """Java's name of a Mac algorithm given in any case; UnknownAlgorithmError (Java's text) otherwise."""
    return _canonical(MACS, algorithm, f"Algorithm {algorithm} not available")


def canonical_key_algorithm(algorithm: str) -> str:
    return _canonical(KEY_GENERATORS, algorithm, f"{algorithm} KeyGenerator not available")


def _canonical(table: Mapping[str, object], algorithm: str, message: str) -> str:
    for name in table:
        if name.lower() == algorithm.lower():
            return name
    raise UnknownAlgorithmError(message)


def check_mac(setting: str, algorithm: str) -> None:
    try:
        canonical_mac(algorithm)
    except UnknownAlgorithmError:
        raise ValueError(_unsupported(setting, algorithm, MACS)) from None


def check_key_algorithm(setting: str, algorithm: str) -> None:
    try:
        canonical_key_algorithm(algorithm)
    except UnknownAlgorithmError:
        raise ValueError(_unsupported(setting, algorithm, KEY_GENERATORS)) from None


def _unsupported(setting: str, algorithm: str, table: Mapping[str, object]) -> str:
    # DistributedConfig.unsupportedAlgorithmException, naming what this worker implements instead of a JVM's list.
    return (
        f"Invalid value {algorithm} for configuration {setting}: the algorithm is not supported by this worker; "
        f"the supported algorithms are: [{', '.join(table)}]"
    )


def key_length(algorithm: str, size_bits: int | None) -> int:
    """Bytes of a key the generator makes; ValueError as DistributedConfig.getInternalRequestKeyGenerator words it."""
    name = canonical_key_algorithm(algorithm)
    bits = KEY_GENERATORS[name] if size_bits is None else size_bits
    problem = None
    if name == "AES" and bits not in AES_SIZES:
        problem = "Wrong keysize: must be equal to 128, 192 or 256"
    elif name in ("HmacMD5", "HmacSHA1") and bits <= 0:
        problem = "Empty key"
    elif name.startswith("HmacSHA") and name != "HmacSHA1" and bits < 40:
        problem = "Key length must be at least 40 bits"
    if problem is not None:
        raise ValueError(
            f"Unable to create key generator with algorithm {algorithm} and key size {size_bits}: {problem}"
        )
    return (bits + 7) // 8


def generate(settings: Settings, now_ms: int) -> SessionKey:
    """A new random key, as the leader's KeyGenerator makes one."""
    length = key_length(settings.key_algorithm, settings.key_size)
    return SessionKey(secrets.token_bytes(length), canonical_key_algorithm(settings.key_algorithm), now_ms)


def mac(key: bytes, body: bytes, algorithm: str) -> bytes:
    """Java's `Mac.getInstance(algorithm).init(key).doFinal(body)`."""
    return hmac.new(key, body, MACS[canonical_mac(algorithm)]).digest()


def signature_headers(key: bytes, body: bytes, algorithm: str) -> dict[str, str]:
    """The two headers RestClient adds to an internal request (InternalRequestSignature.addToRequest)."""
    return {
        SIGNATURE_HEADER: base64.b64encode(mac(key, body, algorithm)).decode("ascii"),
        ALGORITHM_HEADER: algorithm,
    }


@dataclass(frozen=True)
class RequestSignature:
    """The signature an internal request carries, with the body it claims to sign."""

    body: bytes = field(repr=False)
    algorithm: str
    signature: bytes = field(repr=False)

    @classmethod
    def from_headers(cls, body: bytes, headers: Mapping[str, str]) -> RequestSignature | None:
        """None unless both headers are there; Connect's 400 for an unknown algorithm or a value not in Base64."""
        algorithm = headers.get(ALGORITHM_HEADER)
        encoded = headers.get(SIGNATURE_HEADER)
        if algorithm is None or encoded is None:
            return None
        try:
            canonical_mac(algorithm)
        except UnknownAlgorithmError as exc:
            raise BadRequestError(str(exc)) from None
        return cls(body, algorithm, _java_base64(encoded))

    def is_valid(self, key: bytes) -> bool:
        return hmac.compare_digest(mac(key, self.body, self.algorithm), self.signature)


def _java_base64(value: str) -> bytes:
    """java.util.Base64.getDecoder(): the basic alphabet, padding optional, nothing else allowed."""
    text = value + "=" * (-len(value) % 4) if len(value) % 4 != 1 else value
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequestError(
            f"Illegal base64 value in {SIGNATURE_HEADER}: expected the Base64 of the request's MAC"
        ) from None
