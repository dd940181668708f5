"""The one decision of what is secret, by name or by declared type, and scrubbing secrets out of free text."""

from __future__ import annotations

from sparklink.clients.secrets import HIDDEN, is_secret, redact, scrub, secret_values


def test_a_declared_password_is_secret_whatever_its_name() -> None:
    assert is_secret("db.pw", "PASSWORD") and not is_secret("db.pw") and not is_secret("db.pw", "STRING")
    assert is_secret("value.converter.basic.auth.user.info") and is_secret("consumer.override.my.secret")


def test_redact_and_secret_values_follow_declared_types() -> None:
    config = {"db.pw": "abcd1234", "topics": "t", "connection.password": "xyz9"}
    assert redact(config, {"db.pw": "PASSWORD"}) == {"db.pw": HIDDEN, "topics": "t", "connection.password": HIDDEN}
    assert secret_values(config, {"db.pw": "PASSWORD"}) == {"abcd1234", "xyz9"}


def test_scrub_replaces_secrets_in_text_longest_first() -> None:
    assert scrub("auth abcd1234 / abcd failed", {"abcd", "abcd1234"}) == f"auth {HIDDEN} / {HIDDEN} failed"
    assert scrub("a b", {"a"}) == "a b"  # too short to look for
