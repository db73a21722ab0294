"""agent.sandbox.netblock: which networks a sandbox's own network is kept off, and which the
operator
opens in them (the routes as data; tests/sandbox/test_sandbox.py runs them in a real namespace)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

import pytest
from pydantic import TypeAdapter, ValidationError

from agent.sandbox.check import network_targets
from agent.sandbox.netblock import METADATA, PRIVATE, AllowedNetwork, Routes, own_addresses, plan

SLIRP = IPv4Network("10.0.2.0/24")
HOST = IPv4Address("192.0.2.2")


def nets(*names: str) -> tuple[IPv4Network, ...]:
    return tuple(map(IPv4Network, names))


def closes(routes: Routes, address: str) -> bool:
    """Whether the namespace's most specific route to `address` is an unreachable one."""
    found = [(net, "closed") for net in routes.unreachable if IPv4Address(address) in net]
    found += [(net, "open") for net in routes.opened if IPv4Address(address) in net]
    return bool(found) and max(found, key=lambda pair: pair[0].prefixlen)[1] == "closed"


def test_private_link_local_metadata_and_the_machines_own_addresses_are_closed() -> None:
    routes = plan([], [HOST, IPv4Address("127.0.0.1")], local=SLIRP)
    assert routes.unreachable == (*METADATA, *PRIVATE, IPv4Network("192.0.2.2/32"))
    assert routes.opened == ()


@pytest.mark.parametrize(
    "address",
    [
        "1.1.1.1",
        "8.8.8.8",
        "140.82.112.3",
        "151.101.0.223",
        "172.15.255.255",
        "172.32.0.1",
        "192.169.0.1",
        "100.63.255.255",
        "100.128.0.1",
        "192.0.2.3",
    ],
)
def test_the_public_internet_is_never_closed(address: str) -> None:
    assert not closes(plan([], [HOST], local=SLIRP), address)


def test_an_allowed_address_inside_a_private_range_is_opened_alone() -> None:
    routes = plan(nets("10.1.2.3/32"), [HOST], local=SLIRP)
    assert routes.opened == nets("10.1.2.3/32")
    assert not closes(routes, "10.1.2.3")
    assert closes(routes, "10.1.2.4") and closes(routes, "192.168.1.1")


def test_an_allowed_network_takes_the_machines_addresses_in_it_along() -> None:
    routes = plan(nets("10.9.0.0/16"), [IPv4Address("10.9.0.5"), HOST], local=SLIRP)
    assert IPv4Network("10.9.0.5/32") not in routes.unreachable
    assert routes.opened == nets("10.9.0.0/16")
    assert not closes(routes, "10.9.0.5")
    assert closes(routes, "10.10.0.1") and closes(routes, str(HOST))


def test_an_allowed_machine_address_outside_the_private_ranges_needs_no_route() -> None:
    routes = plan(nets("192.0.2.2/32"), [HOST], local=SLIRP)
    assert routes == Routes(unreachable=(*METADATA, *PRIVATE))


def test_a_whole_private_range_allowed_is_no_longer_closed() -> None:
    routes = plan(nets("172.16.0.0/12"), [], local=SLIRP)
    assert IPv4Network("172.16.0.0/12") not in routes.unreachable and routes.opened == ()


def test_the_metadata_addresses_stay_closed_whatever_is_allowed() -> None:
    routes = plan(nets("0.0.0.0/0", "169.254.169.254/32"), [HOST], local=SLIRP)
    assert routes == Routes(unreachable=METADATA)
    assert closes(routes, "169.254.169.254") and closes(routes, "100.100.100.200")
    assert closes(routes, "168.63.129.16")


def test_the_machines_addresses_on_the_sandboxs_own_network_are_left_to_it() -> None:
    """10.0.2.0/24 is slirp4netns's network inside the namespace (its gateway, its resolver),
    not the machine's: closing 10.0.2.3 there would cut the sandbox's DNS."""
    routes = plan([], [IPv4Address("10.0.2.3")], local=SLIRP)
    assert routes == Routes(unreachable=(*METADATA, *PRIVATE))


FIB_TRIE = """\
Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 192.0.2.0/24 2 0 2
        |-- 192.0.2.0
           /24 link UNICAST
        |-- 192.0.2.2
           /32 host LOCAL
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
        |-- 127.0.0.1
           /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     |-- 172.17.0.1
        /32 host LOCAL
     |-- 192.0.2.2
        /32 host LOCAL
     |-- 192.0.2.255
        /32 link BROADCAST
"""


def test_the_machines_addresses_are_its_local_host_routes() -> None:
    assert own_addresses(FIB_TRIE) == [
        IPv4Address(a) for a in ("192.0.2.2", "127.0.0.1", "172.17.0.1")
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.1.2.3", "10.1.2.3/32"),
        (" 10.9.0.0/16", "10.9.0.0/16"),
        ("192.0.2.2/32", "192.0.2.2/32"),
    ],
)
def test_an_allowed_address_is_an_ipv4_address_or_network(value: str, expected: str) -> None:
    assert TypeAdapter(AllowedNetwork).validate_python(value) == IPv4Network(expected)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("10.9.0.1/16", "has host bits set"),
        ("fd00::1", "has no IPv6"),
        ("mirror.internal", "is not an IPv4 address or network"),
        ("169.254.169.254", "never opened"),
        ("169.254.0.0/16", "never opened"),
        ("168.63.129.16", "never opened"),
    ],
)
def test_an_allowed_address_that_cannot_be_opened_is_refused(value: str, said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        TypeAdapter(AllowedNetwork).validate_python(value)


def test_the_self_checks_probe_expects_every_closed_range_closed_but_the_allowed() -> None:
    closed, opened = network_targets(
        nets("10.1.2.3/32", "192.168.0.0/16"), [HOST, IPv4Address("127.0.0.1")], port=4321
    )
    assert closed == [
        "tcp,192.0.2.2,4321",
        "udp,10.255.255.254,53",
        "udp,172.31.255.254,53",
        "udp,100.127.255.254,53",
        "udp,169.254.169.254,80",
        "udp,100.100.100.200,80",
        "udp,168.63.129.16,80",
        "udp,fd00::1,53",
    ]
    assert opened == ["udp,10.1.2.3,53", "udp,192.168.0.0,53"]
