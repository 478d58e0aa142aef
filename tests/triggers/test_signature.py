"""Signature verification against published vectors, and failing closed."""

from __future__ import annotations

import pytest

from triggers.signature import sign, verify

GITHUB_DOCS = (
    "It's a Secret to Everybody",
    b"Hello, World!",
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
)
OCTOKIT = (
    "mysecret",
    b'{\n  "foo": "bar"\n}\n',
    "sha256=e3eccac34c43c7dc1cbb905488b1b81347fcc700a7b025697a9d07862256023f",
)


@pytest.mark.parametrize(("secret", "body", "header"), [GITHUB_DOCS, OCTOKIT])
def test_published_vectors(secret: str, body: bytes, header: str) -> None:
    assert sign(body, secret) == header
    assert verify(body, header, [secret])


@pytest.mark.parametrize(("secret", "body", "header"), [GITHUB_DOCS, OCTOKIT])
def test_any_rotated_secret_is_accepted(secret: str, body: bytes, header: str) -> None:
    assert verify(body, header, ["old-secret", secret])
    assert not verify(body, header, ["old-secret", "other"])


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=",
        "sha256=zz" + "0" * 62,
        "sha256=" + "0" * 64,
        "sha1=0a4d55a8d778e5022fab701977c5d840bbc486d0",
        "SHA256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1",
    ],
)
def test_bad_headers_fail(header: str | None) -> None:
    assert not verify(b"Hello, World!", header, ["It's a Secret to Everybody"])


def test_no_secret_configured_fails() -> None:
    body, header = GITHUB_DOCS[1], GITHUB_DOCS[2]
    assert not verify(body, header, [])


def test_body_change_fails() -> None:
    assert not verify(b"Hello, World?", GITHUB_DOCS[2], [GITHUB_DOCS[0]])
