"""gitwiki.fs.atomic_write: the whole new content or the old one, never a mix; modes kept; no temp files left."""

import os
import stat

import pytest

from gitwiki import fs
from gitwiki.fs import atomic_write


def test_writes_text_as_utf8_and_bytes_as_is_creating_folders(tmp_path):
    target = tmp_path / "a" / "b" / "page.md"
    atomic_write(target, "# Café\n")
    assert target.read_bytes() == "# Café\n".encode()
    atomic_write(target, b"\x00raw\xff")
    assert target.read_bytes() == b"\x00raw\xff"
    assert os.listdir(target.parent) == ["page.md"]  # no temp file left behind


def test_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_mode(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640
    script = tmp_path / "hook"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    atomic_write(script, "#!/bin/sh\nexit 0\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text() == "#!/bin/sh\nexit 0\n"


def test_a_failed_write_keeps_the_old_content_and_removes_the_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "page.md"
    target.write_text("old\n")

    def broken_replace(src, dst, **dir_fds):
        raise OSError("disk full")

    monkeypatch.setattr(fs.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["page.md"]


def test_replacing_through_a_rename_never_shows_a_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "page.md"
    target.write_text("old\n")
    seen = []
    real_replace = os.replace

    def watching_replace(src, dst, **dir_fds):  # names inside the folder handle (src_dir_fd, dst_dir_fd)
        seen.append(
            ((tmp_path / src).read_text(), target.read_text())
        )  # the temp file is complete; the target is untouched
        real_replace(src, dst, **dir_fds)

    monkeypatch.setattr(fs.os, "replace", watching_replace)
    atomic_write(target, "new\n")
    assert seen == [("new\n", "old\n")]
    assert target.read_text() == "new\n"
