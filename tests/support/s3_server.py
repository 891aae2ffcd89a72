"""A moto S3 server over real HTTP on 127.0.0.1, for tests that talk to S3.

Plain helpers plus pytest fixtures. To share the fixtures across the suite, a root
``tests/conftest.py`` can do ``pytest_plugins = ["s3_server"]`` (``tests/`` is on ``sys.path``
once that conftest exists), or import the fixture names.

* ``moto_s3_endpoint`` (session): the server's ``http://127.0.0.1:<port>`` URL.
* ``aws_test_env`` (function): dummy credentials and region in the environment, with any real
  AWS profile, config file or endpoint override hidden, so nothing can reach a real account.
* ``s3_bucket`` (function): a fresh, empty bucket on the moto server; yields its name.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    # Point the shared config/credentials files at nothing, so a developer's ~/.aws is ignored.
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}

HIDDEN_AWS_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "PIPELINE_S3_ENDPOINT_URL",
    "PIPELINE_BLOB_URL",
    "AWS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
)


@contextlib.contextmanager
def running_moto_server() -> Iterator[str]:
    """Start moto's threaded server on a free 127.0.0.1 port; yield its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        # stop() only ends the serve loop; close the listening socket too, so a stopped server
        # refuses connections instead of leaving them hanging in the accept backlog.
        wsgi_server = getattr(server, "_server", None)
        if wsgi_server is not None:
            wsgi_server.server_close()


@contextlib.contextmanager
def dummy_aws_env(monkeypatch: pytest.MonkeyPatch | None = None) -> Iterator[None]:
    """Set DUMMY_AWS_ENV and hide HIDDEN_AWS_ENV for the duration."""
    with contextlib.ExitStack() as stack:
        if monkeypatch is None:
            monkeypatch = stack.enter_context(pytest.MonkeyPatch.context())
        for name in HIDDEN_AWS_ENV:
            monkeypatch.delenv(name, raising=False)
        for name, value in DUMMY_AWS_ENV.items():
            monkeypatch.setenv(name, value)
        yield


def s3_client(endpoint_url: str) -> Any:
    """A plain boto3 S3 client for the moto server (for test setup and inspection)."""
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def create_bucket(endpoint_url: str, name: str | None = None) -> str:
    """Create a bucket (a random unique name by default); return its name."""
    bucket = name or f"test-{uuid.uuid4().hex[:16]}"
    s3_client(endpoint_url).create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture(scope="session")
def moto_s3_endpoint() -> Iterator[str]:
    with running_moto_server() as endpoint_url:
        yield endpoint_url


@pytest.fixture
def aws_test_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with dummy_aws_env(monkeypatch):
        yield


@pytest.fixture
def s3_bucket(moto_s3_endpoint: str, aws_test_env: None) -> str:
    return create_bucket(moto_s3_endpoint)
