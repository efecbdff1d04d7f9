"""A real S3-compatible server on 127.0.0.1 for the object-storage tests and benchmark: moto's
standalone server (HTTP, the S3 wire protocol), with the environment ``storage`` reads set to it."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass

#: fake credentials the tests look for in stored files (they must never be there)
ACCESS_KEY = "AKIACTXREPLAYTEST0001"
SECRET_KEY = "ctxreplay-secret-9f3c2e7a51b04d6e8a"


@dataclass(frozen=True)
class S3:
    endpoint: str
    bucket: str

    def uri(self, *names: str) -> str:
        return "/".join([f"s3://{self.bucket}", *names])

    def keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` (through boto3, not the code under test), but the
        empty ``folder/`` markers pyarrow leaves where it deleted an object."""
        client = _client(self.endpoint)
        out: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        ):
            out.extend(o["Key"] for o in page.get("Contents", []) if not o["Key"].endswith("/"))
        return out

    def get(self, key: str) -> bytes:
        return bytes(_client(self.endpoint).get_object(Bucket=self.bucket, Key=key)["Body"].read())


def _client(endpoint: str):  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ENV = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


@contextlib.contextmanager
def moto_s3(bucket: str = "ctxreplay") -> Iterator[S3]:
    """Start the server on a free port, point the environment at it (child processes inherit
    it), create ``bucket``; everything is put back when the block ends."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_REGION="us-east-1",
    )
    try:
        _client(endpoint).create_bucket(Bucket=bucket)
        yield S3(endpoint, bucket)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
