"""SigV4 re-signing (sans I/O): what the client's Authorization allows, a signature the
receiver verifies over exactly the bytes that leave, the proxy's identity replacing the
client's, credentials from botocore's chain and refreshed by it, never in a message."""

from __future__ import annotations

import datetime

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials, RefreshableCredentials

from aws_util import check_sigv4
from disguiselib import resign
from disguiselib.errors import NeverForward

CLIENT = ReadOnlyCredentials("AKIDCLIENT", "client-secret", "client-token")
PROXY = ReadOnlyCredentials("ASIAPROXY", "proxy-secret", "proxy-token")
STATIC = ReadOnlyCredentials("AKIDSTATIC", "static-secret", None)
URL = "https://127.0.0.1:8080/model/anthropic.claude-x-v1%3A0/invoke"
UP = "https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-x-v1%3A0/invoke"


def client_signed(body: bytes, url: str = URL, sha: bool = False, **extra: str) -> list[tuple[str, str]]:
    host = url.split("/")[2]
    headers = {"content-type": "application/json", "host": host, "accept-encoding": "gzip", **extra}
    if sha:
        headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"
    req = AWSRequest("POST", url, data=body, headers=headers)
    SigV4Auth(CLIENT, "bedrock", "eu-west-3").add_auth(req)
    return list(req.headers.items())


def as_dict(headers: list[tuple[str, str]]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers}


def test_resigned_request_verifies_for_the_new_host_and_body() -> None:
    h = client_signed(b'{"a":"Acme Corp"}')
    auth = resign.client_auth(URL, h)
    assert auth.kind == resign.SIGV4 and auth.scope == resign.Scope("eu-west-3", "bedrock")
    # reverse mode: the request now goes to the real host, with the masked body
    h = [(k, "bedrock-runtime.eu-west-3.amazonaws.com" if k == "host" else v) for k, v in h]
    out = resign.resign("POST", UP, h, b'{"a":"Zenith Labs"}', PROXY, auth)
    d = as_dict(out)
    assert check_sigv4("POST", UP, d, b'{"a":"Zenith Labs"}', PROXY) is None
    assert check_sigv4("POST", UP, d, b'{"a":"Acme Corp"}', PROXY) is not None  # only these bytes
    assert d["x-amz-security-token"] == "proxy-token"
    assert d["authorization"].startswith("AWS4-HMAC-SHA256 Credential=ASIAPROXY/")
    assert "/eu-west-3/bedrock/aws4_request" in d["authorization"]
    assert "client" not in str(out)  # nothing of the client's identity is forwarded
    assert d["accept-encoding"] == "gzip"  # unsigned headers kept as they were


def test_static_credentials_drop_the_clients_session_token() -> None:
    h = client_signed(b"{}")
    out = as_dict(resign.resign("POST", URL, h, b"{}", STATIC, resign.client_auth(URL, h)))
    assert "x-amz-security-token" not in out
    assert check_sigv4("POST", URL, out, b"{}", STATIC) is None


def test_content_sha256_is_recomputed() -> None:
    h = client_signed(b"{}", sha=True)
    out = as_dict(resign.resign("POST", URL, h, b'{"x":1}', PROXY, resign.client_auth(URL, h)))
    import hashlib

    assert out["x-amz-content-sha256"] == hashlib.sha256(b'{"x":1}').hexdigest()
    assert check_sigv4("POST", URL, out, b'{"x":1}', PROXY) is None


def test_hop_by_hop_headers_are_never_signed() -> None:
    h = [("host", "127.0.0.1:8080"), ("connection", "keep-alive"), ("x-amz-date", "20250101T000000Z"),
         ("authorization", "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20250101/eu-west-3/bedrock/aws4_request, "
                           "SignedHeaders=connection;host;x-amz-date, Signature=" + "0" * 64)]  # fmt: skip
    auth = resign.client_auth(URL, h)
    assert "connection" in auth.signed_headers  # the client signed it; a hop may drop it
    out = as_dict(resign.resign("POST", URL, h, b"{}", PROXY, auth))
    assert "connection" not in out["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")


def test_client_auth_kinds() -> None:
    assert resign.client_auth(URL, [("Authorization", "Bearer ABSKkey")]).kind == resign.BEARER
    assert resign.client_auth(URL, []).kind == resign.UNSIGNED
    with pytest.raises(NeverForward, match="presigned") as e:
        resign.client_auth(URL + "?X-Amz-Signature=abc", [])
    with pytest.raises(NeverForward, match="not an AWS SigV4") as e:
        resign.client_auth(URL, [("authorization", "AWS4-HMAC-SHA256 Credential=AKIDSECRETISH/x, Signature=ab")])
    assert "AKIDSECRETISH" not in str(e.value)


def test_identity_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-token")
    creds, why = resign.Identity().get()
    assert creds is not None and why == ""
    assert (creds.access_key, creds.secret_key, creds.token) == ("AKIDENV", "env-secret", "env-token")


def test_identity_without_credentials_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
              "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
              "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):  # fmt: skip
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    creds, why = resign.Identity().get()
    assert creds is None and "no AWS credentials" in why


def test_temporary_credentials_are_refreshed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Expiring credentials (SSO, an assumed role): each signing asks botocore for frozen
    credentials, which refreshes them once they near their expiry."""
    calls = []

    def refresh() -> dict:
        calls.append(1)
        n = len(calls)
        expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=10 if n == 1 else 3600)
        return {"access_key": f"ASIA{n}", "secret_key": f"s{n}", "token": f"t{n}", "expiry_time": expiry.isoformat()}

    creds = RefreshableCredentials.create_from_metadata(refresh(), refresh, "sso")
    ident = resign.Identity()
    monkeypatch.setattr("botocore.session.Session.get_credentials", lambda self: creds)
    first, _ = ident.get()  # expires within botocore's refresh window: refreshed at once
    assert first is not None and first.access_key == "ASIA2"
    again, _ = ident.get()
    assert again is not None and again.access_key == "ASIA2" and len(calls) == 2
    assert ident.method == "sso"


def test_a_host_header_is_signed_as_sent_not_as_the_url_says() -> None:
    """The Host the upstream receives is the one signed, even where the URL names another
    authority (a request forwarded with its client's Host), and whether or not the client
    listed host in its SignedHeaders."""
    sig = "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20250101/eu-west-3/bedrock/aws4_request, SignedHeaders={}, Signature=" + "0" * 64
    for signed in ("content-type;host;x-amz-date", "content-type;x-amz-date"):
        h = [("Host", "bedrock.internal.example"), ("Content-Type", "application/json"),
             ("X-Amz-Date", "20250101T000000Z"), ("Authorization", sig.format(signed))]  # fmt: skip
        out = as_dict(resign.resign("POST", UP, h, b"{}", PROXY, resign.client_auth(UP, h)))
        assert out["host"] == "bedrock.internal.example"
        assert check_sigv4("POST", UP, out, b"{}", PROXY) is None, signed


def test_without_a_host_header_the_urls_authority_is_signed() -> None:
    """An HTTP/2 request has no Host header (its authority is `:authority`, the URL's):
    that is what is signed, and nothing the upstream will not receive."""
    h = [(k, v) for k, v in client_signed(b"{}", url=UP) if k.lower() != "host"]
    out = resign.resign("POST", UP, h, b"{}", PROXY, resign.client_auth(UP, h))
    d = as_dict(out)
    assert "host" not in d  # not added to what is sent: the authority carries it
    assert check_sigv4("POST", UP, {**d, "host": UP.split("/")[2]}, b"{}", PROXY) is None


def test_the_headers_the_client_signed_stay_signed() -> None:
    """What the client protected with its signature (here content-type and a custom
    header) the new signature protects too; what it left unsigned stays unsigned."""
    h = client_signed(b"{}", **{"X-Custom-Trace": "abc"})
    out = as_dict(resign.resign("POST", URL, h, b"{}", PROXY, resign.client_auth(URL, h)))
    signed = out["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"content-type", "host", "x-amz-date", "x-custom-trace", "x-amz-security-token"} <= set(signed)
    changed = {**out, "content-type": "text/plain"}
    assert check_sigv4("POST", URL, changed, b"{}", PROXY) is not None  # a changed signed header fails
    h = [(k, v) for k, v in h] + [("X-Unsigned", "1")]
    out = as_dict(resign.resign("POST", URL, h, b"{}", PROXY, resign.client_auth(URL, h)))
    assert "x-unsigned" not in out["authorization"] and out["x-unsigned"] == "1"


def test_a_signature_without_signed_headers_is_re_signed_over_host() -> None:
    h = [("host", "127.0.0.1:8080"), ("x-amz-date", "20250101T000000Z"),
         ("authorization", "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20250101/eu-west-3/bedrock/aws4_request, "
                           "Signature=" + "0" * 64)]  # fmt: skip
    auth = resign.client_auth(URL, h)
    assert auth == resign.ClientAuth(resign.SIGV4, resign.Scope("eu-west-3", "bedrock"), ())
    out = as_dict(resign.resign("POST", URL, h, b"{}", PROXY, auth))
    assert check_sigv4("POST", URL, out, b"{}", PROXY) is None


def test_refusals_say_why_in_words_a_user_can_act_on() -> None:
    with pytest.raises(NeverForward) as e:
        resign.client_auth(URL + "?X-Amz-Signature=abc", [])
    assert str(e.value) == "a presigned AWS request (X-Amz-Signature in the URL) cannot be re-signed; not forwarded"
    with pytest.raises(NeverForward) as e:
        resign.client_auth(URL, [("authorization", "Basic dXNlcjpwYXNz")])
    assert str(e.value) == "the request's Authorization is not an AWS SigV4 signature disguise can re-sign; not forwarded"


def _no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
              "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
              "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):  # fmt: skip
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_identity_reads_the_named_profile(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    _no_aws_environment(monkeypatch, tmp_path)
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = d\n"
        "[team]\naws_access_key_id = AKIDTEAM\naws_secret_access_key = t\n"
    )
    creds, why = resign.Identity("team").get()
    assert creds is not None and creds.access_key == "AKIDTEAM" and why == ""
    creds, why = resign.Identity("nosuch").get()
    assert creds is None and why == "AWS credentials could not be resolved (ProfileNotFound)"


def test_identity_without_credentials_says_exactly_that(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    _no_aws_environment(monkeypatch, tmp_path)
    assert resign.Identity().get() == (None, "no AWS credentials found in mitmdump's environment")


@pytest.mark.parametrize("key,secret", [("AKIDONLY", ""), ("", "secret-only")])
def test_incomplete_credentials_are_not_used(monkeypatch: pytest.MonkeyPatch, key: str, secret: str) -> None:
    creds = ReadOnlyCredentials(key, secret, None)

    class Half:
        method = "env"

        def get_frozen_credentials(self) -> ReadOnlyCredentials:
            return creds

    monkeypatch.setattr("botocore.session.Session.get_credentials", lambda self: Half())
    assert resign.Identity().get() == (None, "AWS credentials are incomplete")
