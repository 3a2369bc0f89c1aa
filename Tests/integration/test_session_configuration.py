"""Validation and echo of the newer `configuration` fields (cookies, credentials, TLS, proxy,
bandwidth, discretionary): every bad value is a 422 naming its field, unknown fields are refused,
and GET echoes the configuration with defaults filled in and secrets redacted."""

from __future__ import annotations

import pytest

from support.api import assert_problem, create_session, get_session, put_session, session_path, unique
from support.transferd import run_transferd

BASIC = {"host": "example.com", "scheme": "basic", "username": "u", "password": "p"}
PIN = "sha256//" + "A" * 43 + "="


@pytest.mark.parametrize("configuration,field", [
    ({"cookies": {"send": "yes"}}, "configuration.cookies.send"),
    ({"cookies": "always"}, "configuration.cookies"),
    ({"credentials": {"host": "h"}}, "configuration.credentials"),
    ({"credentials": [{"scheme": "basic", "username": "u", "password": "p"}]}, "configuration.credentials[0].host"),
    ({"credentials": [{**BASIC, "host": "a/b"}]}, "configuration.credentials[0].host"),
    ({"credentials": [{**BASIC, "host": "[::zz]"}]}, "configuration.credentials[0].host"),
    ({"credentials": [{**BASIC, "port": 0}]}, "configuration.credentials[0].port"),
    ({"credentials": [{**BASIC, "port": 70000}]}, "configuration.credentials[0].port"),
    ({"credentials": [{**BASIC, "path_prefix": "api"}]}, "configuration.credentials[0].path_prefix"),
    ({"credentials": [{**BASIC, "username": "a:b"}]}, "configuration.credentials[0].username"),
    ({"credentials": [{**BASIC, "password": "p\nX-Evil: 1"}]}, "configuration.credentials[0].password"),
    ({"credentials": [{**BASIC, "password": "<redacted>"}]}, "configuration.credentials[0].password"),
    ({"credentials": [{**BASIC, "token": "t"}]}, "configuration.credentials[0].token"),
    ({"credentials": [{"host": "h", "scheme": "basic", "username": "u"}]}, "configuration.credentials[0].password"),
    ({"credentials": [{"host": "h", "scheme": "bearer"}]}, "configuration.credentials[0].token"),
    ({"credentials": [{"host": "h", "scheme": "bearer", "token": "a b"}]}, "configuration.credentials[0].token"),
    ({"credentials": [{"host": "h", "scheme": "bearer", "token": "t", "username": "u"}]},
     "configuration.credentials[0].username"),
    ({"credentials": [BASIC, {**BASIC, "scheme": "kerberos"}]}, "configuration.credentials[1].scheme"),
    ({"max_bytes_per_second": 1000}, "configuration.max_bytes_per_second"),
    ({"max_bytes_per_second": 2048.5}, "configuration.max_bytes_per_second"),
    ({"max_bytes_per_second": "1M"}, "configuration.max_bytes_per_second"),
    ({"proxy": "http://p:3128"}, "configuration.proxy"),
    ({"proxy": {}}, "configuration.proxy.url"),
    ({"proxy": {"url": "not a url"}}, "configuration.proxy.url"),
    ({"proxy": {"url": "http://p:3128", "no_proxy": "a;b"}}, "configuration.proxy.no_proxy"),
    ({"proxy": {"url": "http://p:3128", "user": "u"}}, "configuration.proxy.user"),
    ({"tls": {"ca_file": "relative/ca.pem"}}, "configuration.tls.ca_file"),
    ({"tls": {"ca_file": 5}}, "configuration.tls.ca_file"),
    ({"tls": {"client_cert_file": "/c.pem"}}, "configuration.tls.client_key_file"),
    ({"tls": {"client_key_file": "/k.pem"}}, "configuration.tls.client_cert_file"),
    ({"tls": {"pinned_public_key": "abc"}}, "configuration.tls.pinned_public_key"),
    ({"tls": {"pinned_public_key": "sha256//short="}}, "configuration.tls.pinned_public_key"),
    ({"tls": {"pinned_public_key": PIN + ";md5//x"}}, "configuration.tls.pinned_public_key"),
    ({"tls": {"verify": False}}, "configuration.tls.verify"),
    ({"discretionary": "true"}, "configuration.discretionary"),
])
def test_bad_values_are_422_naming_the_field(shared_transferd, configuration, field):
    sid = unique("cfg")
    problem = assert_problem(put_session(shared_transferd, sid, "default", configuration), 422, field=field)
    assert problem["field"] == field, problem
    assert shared_transferd.get(session_path(sid)).status_code == 404


def test_a_bad_value_on_reattach_leaves_the_configuration_as_it_was(shared_transferd):
    sid = create_session(shared_transferd, configuration={"max_bytes_per_second": 50_000})
    assert_problem(put_session(shared_transferd, sid, "default", {"max_bytes_per_second": 5}), 422)
    assert get_session(shared_transferd, sid)["configuration"]["max_bytes_per_second"] == 50_000


def test_the_configuration_is_echoed_with_defaults_and_secrets_redacted(shared_transferd):
    sid = create_session(shared_transferd, mode="background", configuration={
        "discretionary": True,
        "cookies": {"accept": "same_domain"},
        "credentials": [BASIC, {"host": "[::1]", "port": 8443, "scheme": "bearer", "token": "tok"},
                        {"host": "API.Example.com", "path_prefix": "/v2", "scheme": "digest", "username": "d",
                         "password": "dp"}],
        "max_bytes_per_second": 1_000_000,
        "proxy": {"url": "socks5h://proxy.internal:1080"},
        "tls": {"pinned_public_key": PIN},
    })
    config = get_session(shared_transferd, sid)["configuration"]
    assert config["discretionary"] is True
    assert config["cookies"] == {"accept": "same_domain", "send": True}
    assert config["credentials"] == [
        {"host": "example.com", "scheme": "basic", "username": "u", "password": "<redacted>"},
        {"host": "[::1]", "port": 8443, "scheme": "bearer", "token": "<redacted>"},
        {"host": "api.example.com", "path_prefix": "/v2", "scheme": "digest", "username": "d", "password": "<redacted>"},
    ]
    assert config["max_bytes_per_second"] == 1_000_000
    assert config["proxy"] == {"url": "socks5h://proxy.internal:1080", "no_proxy": None}
    assert config["tls"] == {"ca_file": None, "client_cert_file": None, "client_key_file": None, "pinned_public_key": PIN}


def test_defaults_of_the_newer_fields(shared_transferd):
    config = get_session(shared_transferd, create_session(shared_transferd))["configuration"]
    assert config["discretionary"] is False
    assert config["cookies"] == {"accept": "always", "send": True}
    assert config["credentials"] == []
    assert config["max_bytes_per_second"] is None
    assert config["proxy"] is None and config["tls"] is None


@pytest.mark.parametrize("flag,variable,value", [
    ("--max-bytes-per-second", "TRANSFERD_MAX_BYTES_PER_SECOND", "100"),
    ("--max-bytes-per-second", "TRANSFERD_MAX_BYTES_PER_SECOND", "1M"),
    ("--max-running-transfers", "TRANSFERD_MAX_RUNNING_TRANSFERS", "0"),
    ("--max-running-transfers", "TRANSFERD_MAX_RUNNING_TRANSFERS", "many"),
])
def test_bad_engine_limits_stop_transferd_naming_the_flag(flag, variable, value):
    for result, name in ((run_transferd([flag, value]), flag), (run_transferd([], env={variable: value}), variable)):
        assert result.exited and result.returncode > 0, result.stderr
        assert name in result.stderr and value in result.stderr, result.stderr
