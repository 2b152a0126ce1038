"""The lab's object store: moto's S3 server on 127.0.0.1 (standard library only here; the
server runs from its own venv, requirements-s3.lock), where the real Trino's Delta Lake
catalog keeps its tables and its file metastore.

Why an object store: Trino's Delta Lake connector commits a write through a transaction
log synchronizer of the file system's scheme, and it has one for S3, GCS and Azure only;
on a local file system it refuses every write ("Writes are not enabled on the file
filesystem"), so neither `optimize` nor Trino-written tables could be had there. moto
keeps its objects in memory: the lab uploads the delta-rs tables at every start, and the
tables Trino writes are written again.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

BUCKET = "lake"
REGION = "us-east-1"
# moto checks no signature: any key pair is accepted (Trino signs with these)
ACCESS_KEY = "lab"
SECRET_KEY = "lab-secret"


class ObjectStoreError(Exception):
    pass


def start(venv: Path, port: int, log_path: Path) -> subprocess.Popen:
    """moto's S3 server on `port`, ready, with the lab's bucket."""
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [str(venv / "bin" / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    url = endpoint(port)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise ObjectStoreError(f"moto's S3 server exited ({proc.returncode}); see {log_path}:\n"
                                   + log_path.read_text(errors="replace")[-2000:])
        try:
            request("PUT", f"{url}/{BUCKET}")
            return proc
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                proc.kill()
                raise ObjectStoreError(f"moto's S3 server did not answer on {url} within 60 s; see {log_path}") from None
            time.sleep(0.2)


def endpoint(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def request(method: str, url: str, body: bytes | None = None) -> bytes:
    # (urllib's default body type is a form, which the server then tries to parse)
    headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def upload(url: str, local: Path, prefix: str) -> int:
    """Every file under `local` to `s3://BUCKET/<prefix>/<its relative path>`; how many."""
    n = 0
    for f in sorted(Path(local).rglob("*")):
        if not f.is_file():
            continue
        key = f"{prefix.strip('/')}/{f.relative_to(local).as_posix()}"
        try:
            request("PUT", f"{url}/{BUCKET}/{urllib.parse.quote(key)}", f.read_bytes())
        except urllib.error.HTTPError as e:
            raise ObjectStoreError(f"uploading {f} to s3://{BUCKET}/{key}: HTTP {e.code}") from None
        n += 1
    return n


def keys(url: str, prefix: str) -> list[str]:
    """The keys under `prefix` (ListObjectsV2, every page)."""
    import xml.etree.ElementTree as ET

    ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
    out: list[str] = []
    token = None
    while True:
        q = {"list-type": "2", "prefix": prefix}
        if token:
            q["continuation-token"] = token
        root = ET.fromstring(request("GET", f"{url}/{BUCKET}?{urllib.parse.urlencode(q)}"))
        out += [k.text for k in root.findall("s3:Contents/s3:Key", ns)]
        token_el = root.find("s3:NextContinuationToken", ns)
        if token_el is None:
            return out
        token = token_el.text
