"""Index archives built by hand: read one apart, write members with every header field chosen, and a doctored
archive whose manifest is consistent but whose database was changed."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import tarfile

from gitwiki.index.artifact import MANIFEST_NAME
from gitwiki.index.store import DB_NAME


def read_archive(path):
    with tarfile.open(path, "r:gz") as tar:
        manifest = json.loads(tar.extractfile(MANIFEST_NAME).read())
        db = tar.extractfile(DB_NAME).read()
    return manifest, db


def write_archive(path, members):
    """members: (TarInfo, bytes | None) in order; the caller decides every header field."""
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def regular(name, data):
    return tarfile.TarInfo(name), data


def manifest_bytes(manifest):
    return json.dumps(manifest).encode()


def doctored(genuine, path, sql):
    """A self-consistent archive (manifest size and sha256 match) whose database ran `sql`."""
    manifest, db = read_archive(genuine)
    scratch = path.with_suffix(".sqlite")
    scratch.write_bytes(db)
    conn = sqlite3.connect(scratch)
    conn.executescript(sql)
    conn.close()
    data = scratch.read_bytes()
    manifest["files"] = [{"path": DB_NAME, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}]
    return write_archive(path, [regular(MANIFEST_NAME, manifest_bytes(manifest)), regular(DB_NAME, data)])
