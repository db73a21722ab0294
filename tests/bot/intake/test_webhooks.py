"""The sans-I/O webhook core: signatures over the exact bytes, deliveries parsed into Events."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import MalformedDelivery
from bot.intake.webhooks import parse_delivery, sign, verify_signature
from tests.fixtures import webhook_bytes

SECRET = "It's a Secret to Everybody"
LABELED = webhook_bytes("issues", "labeled.payload.json")
FIXTURE_BODIES = [
    path.read_bytes()
    for path in sorted((Path(__file__).parents[2] / "fixtures").rglob("*payload.json"))
]


def headers(event: str, delivery: str = "72d3162e-cc78-11e3-81ab-4c9367dc0958") -> dict[str, str]:
    """The headers a real delivery carries (see tests/fixtures/README.md)."""
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-GitHub-Hook-ID": "292430182",
        "User-Agent": "GitHub-Hookshot/044aadd",
        "Content-Type": "application/json",
    }


def test_the_signature_is_the_hmac_sha256_of_the_raw_body() -> None:
    expected = hmac.new(SECRET.encode(), LABELED, hashlib.sha256).hexdigest()
    assert sign(LABELED, SECRET) == f"sha256={expected}"


def test_githubs_documented_example_signature_verifies() -> None:
    # From GitHub's "Validating webhook deliveries" documentation.
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert verify_signature(b"Hello, World!", header, SECRET)


def test_a_correct_signature_verifies() -> None:
    assert verify_signature(LABELED, sign(LABELED, SECRET), SECRET)


def test_a_signature_made_with_another_secret_fails() -> None:
    assert not verify_signature(LABELED, sign(LABELED, "other"), SECRET)


def test_a_changed_body_fails() -> None:
    assert not verify_signature(LABELED + b" ", sign(LABELED, SECRET), SECRET)


@pytest.mark.parametrize("header", [None, "", "sha256=", "sha1=abc", "sha256=é"])
def test_a_missing_or_garbled_signature_fails(header: str | None) -> None:
    assert not verify_signature(LABELED, header, SECRET)


def test_an_empty_secret_verifies_nothing() -> None:
    assert not verify_signature(LABELED, sign(LABELED, ""), "")


def test_a_delivery_is_parsed_into_an_event() -> None:
    event = parse_delivery(headers("issues"), LABELED)
    assert (event.name, event.action) == ("issues", "labeled")
    assert event.delivery_id == "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    assert event.repository == "Codertocat/Hello-World"
    assert (event.sender_login, event.sender_type) == ("Codertocat", "User")
    assert event.installation_id is None
    assert event.payload["label"]["name"] == "bug"


def test_header_names_are_matched_in_any_case() -> None:
    lowered = {name.lower(): value for name, value in headers("issues").items()}
    assert parse_delivery(lowered, LABELED).name == "issues"


def test_the_installation_id_is_read_when_present() -> None:
    body = webhook_bytes("pull_request", "opened.payload.json")
    event = parse_delivery(headers("pull_request"), body)
    assert isinstance(event.installation_id, int)


def test_an_event_without_action_has_none() -> None:
    event = parse_delivery(headers("ping"), webhook_bytes("ping"))
    assert event.action is None


def test_a_form_encoded_delivery_is_read_from_its_payload_field() -> None:
    body = urlencode({"payload": LABELED.decode()}).encode()
    form = {**headers("issues"), "Content-Type": "application/x-www-form-urlencoded"}
    assert parse_delivery(form, body).action == "labeled"


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe", b""])
def test_a_body_that_is_not_a_json_object_is_malformed(body: bytes) -> None:
    with pytest.raises(MalformedDelivery):
        parse_delivery(headers("issues"), body)


def test_the_payload_is_the_standard_parsers_value_for_every_fixture() -> None:
    assert len(FIXTURE_BODIES) >= 17  # every recorded delivery in tests/fixtures
    for body in FIXTURE_BODIES:
        assert parse_delivery(headers("issues"), body).payload == json.loads(body)


def test_a_body_the_fast_parser_refuses_is_read_as_the_standard_parser_reads_it() -> None:
    body = b'{"action": "opened", "n": NaN, "i": Infinity, "x": 1e400}'  # json's extensions
    payload = parse_delivery(headers("issues"), body).payload
    assert repr(payload) == repr(json.loads(body))


@pytest.mark.parametrize(
    "number", [2**63, 2**64 - 1, 2**64, 10**25, -(2**63), -(2**63) - 1, -(2**70)]
)
def test_integers_of_any_size_read_as_the_standard_parser_reads_them(number: int) -> None:
    body = b'{"action": "opened", "issue": {"number": %d, "score": 1.25}}' % number
    payload = parse_delivery(headers("issues"), body).payload
    assert repr(payload) == repr(json.loads(body))  # an int stays an int: no float


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), JSON_VALUES, max_size=6))
def test_any_json_object_reads_as_the_standard_parser_reads_it(payload: dict[str, object]) -> None:
    for body in (json.dumps(payload), json.dumps(payload, ensure_ascii=False)):
        read = parse_delivery(headers("issues"), body.encode()).payload
        assert repr(read) == repr(json.loads(body))


@pytest.mark.parametrize("body", [b'\xef\xbb\xbf{"action": "opened"}', b'{"a": "\xff"}'])
def test_a_bom_or_invalid_utf8_is_malformed_as_before(body: bytes) -> None:
    with pytest.raises(MalformedDelivery, match="not JSON"):
        parse_delivery(headers("issues"), body)


@pytest.mark.parametrize("missing", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_a_delivery_without_its_event_or_id_is_malformed(missing: str) -> None:
    partial = {k: v for k, v in headers("issues").items() if k != missing}
    with pytest.raises(MalformedDelivery, match=missing.lower()):
        parse_delivery(partial, LABELED)
