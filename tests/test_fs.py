"""gitwiki.fs.atomic_write: the whole new content or the old one, never a mix; modes kept; no temp files left."""

import os
import stat
from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("../x.md", "contains '..'"),
        ("wiki/../../x.md", "contains '..'"),
        ("wiki/..", "contains '..'"),
        (".git/x.md", "points into .git"),
        ("wiki/.GIT/config.md", "points into .git"),
        ("wiki/.git. /x.md", "points into .git"),
        ("GIT~1/x.md", "points into .git"),
        ("wiki/\u200c.git/x.md", "points into .git"),  # HFS+ ignores U+200C: past the fast path's regex too
        ("wiki/.g\ufeffit/x.md", "points into .git"),
        # NTFS opens a name's data stream after a colon: `.git::$INDEX_ALLOCATION` is the git dir there (git's
        # is_ntfs_dotgit stops at ':' too)
        ("wiki/.git::$INDEX_ALLOCATION/x.md", "points into .git"),
        ("wiki/.GIT:x/y.md", "points into .git"),
        ("wiki/git~1::$INDEX_ALLOCATION/x.md", "points into .git"),
        ("/etc/x.md", "is absolute"),
        ("C:x.md", "is absolute"),
        ("wiki\\x.md", "contains a backslash"),
        ("wiki/x\n.md", "contains a control character"),
        ("wiki//x.md", "has an empty or '.' component"),
        ("./x.md", "has an empty or '.' component"),
        ("", "is empty"),
    ],
)
def test_path_problem_refuses_what_could_leave_the_repo_or_reach_git(path, says):
    assert fs.path_problem(path) == says


@pytest.mark.parametrize("path", ["x.md", "wiki/a b/é.md", "wiki/.github/x.md", "wiki/..x.md", "wiki/git/x.md"])
def test_path_problem_accepts_ordinary_pages(path):
    assert fs.path_problem(path) is None


@given(
    st.lists(
        st.sampled_from(
            ["a", "..", ".", "", ".git", ".Git ", "GIT~1", "b.md", "\\", ":", "c:", "\x00", "é", "\u200c.git"]
        ),
        min_size=1,
    )
)
def test_an_accepted_path_stays_inside_the_folder_it_is_joined_to(parts):
    path = "/".join(parts)
    if fs.path_problem(path) is None:
        joined = os.path.normpath(os.path.join("/root", path))
        assert joined.startswith("/root/") and PurePosixPath(path).as_posix() == path
        assert all(p.replace("\u200c", "").casefold().rstrip(". ") != ".git" for p in PurePosixPath(path).parts)


def test_a_directory_where_a_page_is_read_is_refused_as_not_a_regular_file(tmp_path):
    """An `index.md` that is a folder: found by a re-check, add_markdown below it answered -32603
    (IsADirectoryError) because the file object was made before the type check."""
    (tmp_path / "wiki" / "index.md").mkdir(parents=True)
    with pytest.raises(fs.UnsafeFile, match="not a regular file"):
        fs.read_page_file(tmp_path, "wiki/index.md")


# ---- read_bounded: the one reader for files a checkout, a page, a config value or an import names ----------


def _refused(path, **kw) -> str:
    from gitwiki.errors import RefusedFile

    with pytest.raises(RefusedFile) as info:
        fs.read_bounded(path, what="question file", fix="pass a regular file", **kw)
    message = str(info.value)
    assert message.startswith("question file ") and message.endswith("; pass a regular file") and "\n" not in message
    return message


def test_read_bounded_reads_a_regular_file_inside_its_roots(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"hello\n")
    assert fs.read_bounded(tmp_path / "a.txt", roots=[tmp_path]) == b"hello\n"
    assert fs.read_bounded(tmp_path / "a.txt", cap=6) == b"hello\n"  # exactly the cap is allowed
    with pytest.raises(FileNotFoundError):
        fs.read_bounded(tmp_path / "missing.txt", roots=[tmp_path])


def test_read_bounded_refuses_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    assert "is a FIFO, not a regular file" in _refused(tmp_path / "fifo")  # blocked in open() without O_NONBLOCK
    assert "is a folder" in _refused(tmp_path)
    for pseudo in ("/dev/zero", "/proc/self/status", "/proc/self/fd/0"):
        assert "pseudo-file" in _refused(pseudo)  # /dev/zero read until memory ran out
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert "pseudo-file (/dev/zero)" in _refused(tmp_path / "zero")
    assert "no file name" in _refused("a\0b")
    assert "no file name" in _refused("x/" * 3000)


def test_read_bounded_keeps_to_its_roots_after_resolving_dotdot_and_symlinks(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside.txt"
    repo.mkdir()
    outside.write_text("secret")
    (repo / "link.txt").symlink_to(outside)
    (repo / "sub").mkdir()
    for path in (outside, repo / "link.txt", repo / "sub" / ".." / ".." / "outside.txt", "/etc/passwd"):
        assert "is outside" in _refused(path, roots=[repo])
    assert fs.read_bounded(repo / "link.txt") == b"secret"  # a path the user typed: no roots


def test_read_bounded_caps_the_size(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 1001)
    assert "is 1,001 bytes, over the 1,000 bytes" in _refused(tmp_path / "big", cap=1000)


def test_read_bounded_reads_the_file_it_checked(tmp_path, monkeypatch):
    """A file swapped for a FIFO (or another file) between the check and the open is refused, not read."""
    target = tmp_path / "q.jsonl"
    target.write_text("{}\n")
    real_open = os.open

    def swapping_open(path, flags, *args, **kw):
        if str(path) == str(target):
            os.unlink(target)
            os.mkfifo(target)
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(fs.os, "open", swapping_open)
    message = _refused(target)  # the new FIFO may reuse the old inode number: then its kind tells
    assert "was replaced while being read" in message or "is a FIFO" in message


def test_atomic_write_removes_the_temp_files_killed_writes_of_its_file_left(tmp_path):
    import os
    import time

    from gitwiki.fs import STALE_TEMP_SECONDS, TEMP_PREFIX, atomic_write

    old, live = tmp_path / f"{TEMP_PREFIX}x.toml.aaaa", tmp_path / f"{TEMP_PREFIX}x.toml.bbbb"
    other = tmp_path / f"{TEMP_PREFIX}y.md.cccc"  # another file's: its own next write removes it
    for path, text in ((old, "killed"), (live, "being written"), (other, "killed")):
        path.write_text(text)
    then = time.time() - STALE_TEMP_SECONDS - 5
    os.utime(old, (then, then))
    os.utime(other, (then, then))
    atomic_write(tmp_path / "x.toml", "new\n")
    assert (tmp_path / "x.toml").read_text() == "new\n"
    assert not old.exists() and live.exists() and other.exists()
