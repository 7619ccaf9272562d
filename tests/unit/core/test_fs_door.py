"""resolver/core/fs.py, the door: every path below a root is reached without a link, reads are regular
files only, writes atomic beside their name, logs and backups new files, trees removed only when ours."""

from __future__ import annotations

import os
import threading

import pytest

from resolver.core import fs
from resolver.core.errors import BadInput, ExitCode


@pytest.fixture()
def world(tmp_path):
    """A root, a folder outside it with one file, and the outside's content to compare after."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep.txt").write_text("outside\n")
    fs.register_root(root, what="the test root")
    return root, outside


def snapshot(folder):
    return {p: (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def test_a_link_at_any_folder_of_the_path_is_refused_for_every_operation(world):
    root, outside = world
    before = snapshot(outside)
    os.symlink(outside, root / "a" / "link")
    target = root / "a" / "link" / "keep.txt"
    operations = [
        lambda: fs.write_atomic(target, b"x"),
        lambda: fs.read_bytes_bounded(target, limit=100, what="the file"),
        lambda: fs.open_read(target),
        lambda: fs.remove_file(target),
        lambda: fs.remove_tree(root / "a" / "link" / "sub"),
        lambda: fs.rename(root / "a" / "b", root / "a" / "link" / "b"),
        lambda: fs.make_folder(root / "a" / "link" / "new"),
        lambda: fs.create_new(root / "a" / "link" / "new.log"),
        lambda: fs.copy_file(root / "a" / "link" / "keep.txt", root / "copy", limit=100),
        lambda: fs.sha256_of(target),
    ]
    for operation in operations:
        with pytest.raises(BadInput) as info:
            operation()
        assert info.value.code == ExitCode.BAD_INPUT and "symbolic link" in info.value.message
    assert snapshot(outside) == before


def test_a_link_at_the_root_itself_is_the_users_choice(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "via")
    fs.register_root(tmp_path / "via", what="a linked root")
    fs.write_atomic(tmp_path / "via" / "x" / "f", b"ok")
    assert (real / "x" / "f").read_bytes() == b"ok"


def test_a_write_replaces_a_link_at_its_name_and_never_writes_through_it(world):
    root, outside = world
    os.symlink(outside / "keep.txt", root / "a" / "f")
    fs.write_atomic(root / "a" / "f", b"new")
    assert not (root / "a" / "f").is_symlink() and (root / "a" / "f").read_bytes() == b"new"
    assert (outside / "keep.txt").read_text() == "outside\n"


def test_reads_refuse_special_files_without_blocking(world, tmp_path):
    root, _ = world
    os.mkfifo(root / "a" / "fifo")
    os.symlink("/dev/zero", root / "a" / "zero")
    done = []

    def read_all():
        for name in ("fifo", "zero"):
            with pytest.raises(BadInput):
                fs.read_bytes_bounded(root / "a" / name, limit=10, what="the file")
            with pytest.raises(BadInput):
                fs.open_read(root / "a" / name)
        done.append(True)

    worker = threading.Thread(target=read_all, daemon=True)
    worker.start()
    worker.join(10)
    assert done, "a read blocked on a FIFO"


def test_a_fifo_where_a_folder_is_needed_is_refused(world):
    root, _ = world
    os.mkfifo(root / "a" / "pipe")
    with pytest.raises(BadInput, match="special file"):
        fs.write_atomic(root / "a" / "pipe" / "f", b"x")


def test_a_log_or_backup_never_opens_what_is_at_its_name(world):
    root, outside = world
    os.symlink(outside / "keep.txt", root / "a" / "setup-1.log")
    (root / "a" / "setup-1-2.log").write_text("an earlier log\n")
    handle, path = fs.create_new(root / "a" / "setup-1.log")
    with handle:
        handle.write(b"this run\n")
    assert path == root / "a" / "setup-1-3.log" and path.read_text() == "this run\n"
    assert (outside / "keep.txt").read_text() == "outside\n" and (root / "a" / "setup-1-2.log").read_text() == "an earlier log\n"
    os.unlink(path)
    os.symlink(outside / "keep.txt", path)
    with pytest.raises(BadInput):
        fs.open_append(path)


def test_a_tree_is_removed_only_when_ours_and_links_inside_are_removed_not_followed(world):
    root, outside = world
    tree = root / "a" / "tree"
    (tree / "deep").mkdir(parents=True)
    (tree / "deep" / "f").write_text("x")
    os.symlink(outside, tree / "deep" / "out")
    with pytest.raises(BadInput, match="not made by the resolver"):
        fs.remove_tree(tree, made_by_us=True)
    assert tree.is_dir()
    fs.mark_tree(tree)
    assert fs.is_marked_tree(tree) and fs.remove_tree(tree, made_by_us=True)
    assert not tree.exists() and (outside / "keep.txt").is_file()
    os.symlink(outside, tree)
    with pytest.raises(BadInput, match="symbolic link"):
        fs.remove_tree(tree)
    assert (outside / "keep.txt").is_file()


def test_a_tree_of_its_own_is_followed_to_read_and_write_inside_never_removed_or_moved(tmp_path):
    root, env = tmp_path / "project", tmp_path / "elsewhere-env"
    (root / "envs").mkdir(parents=True)
    (env / "lib").mkdir(parents=True)
    (env / "lib" / "f").write_text("inside")
    os.symlink(env, root / "envs" / "cpu")
    fs.register_root(root, what="the project", own_trees=(("envs", "*"),))
    assert fs.read_bytes_bounded(root / "envs" / "cpu" / "lib" / "f", limit=100, what="the file") == b"inside"
    fs.write_atomic(root / "envs" / "cpu" / "marker", b"ready")
    assert (env / "marker").read_bytes() == b"ready"
    with pytest.raises(BadInput):
        fs.remove_tree(root / "envs" / "cpu")
    with pytest.raises(BadInput):
        fs.rename(root / "envs" / "cpu", root / "envs" / "cpu-old")
    assert (env / "lib" / "f").is_file() and (root / "envs" / "cpu").is_symlink()


def test_under_names_a_root_for_one_call(tmp_path):
    channel, outside = tmp_path / "channel", tmp_path / "outside"
    channel.mkdir()
    outside.mkdir()
    os.symlink(outside, channel / "linux-64")
    with pytest.raises(BadInput):
        fs.write_atomic(channel / "linux-64" / "repodata.json", b"{}", under=channel)
    assert list(outside.iterdir()) == []
    with pytest.raises(ValueError):
        fs.write_atomic(outside / "x", b"", under=channel)


def test_bounded_copy_and_listing(world):
    root, _ = world
    fs.write_atomic(root / "a" / "src", b"12345")
    assert fs.copy_file(root / "a" / "src", root / "b" / "dst", limit=5) == 5
    with pytest.raises(BadInput, match="larger than"):
        fs.copy_file(root / "a" / "src", root / "b" / "dst2", limit=4)
    assert not (root / "b" / "dst2").exists()
    assert fs.list_names(root / "b") == ["dst"] and fs.list_names(root / "none") == []


def test_empty_folders_and_links_placed_through_the_door(world):
    root, outside = world
    (root / "a" / "empty").mkdir()
    os.symlink(outside, root / "a" / "out")
    assert fs.remove_empty_folder(root / "a" / "empty") and not (root / "a" / "empty").exists()
    assert not fs.remove_empty_folder(root / "a" / "out") and (root / "a" / "out").is_symlink()
    assert not fs.remove_empty_folder(root / "a")  # not empty
    fs.place_link(outside / "keep.txt", root / "a" / "out")  # swapped in: the old link replaced, not followed
    assert os.readlink(root / "a" / "out") == str(outside / "keep.txt") and (outside / "keep.txt").is_file()


def test_roots_travel_to_a_child_process_as_data(world):
    root, _ = world
    roots = fs.registered_roots()
    assert any(r["path"] == str(root) for r in roots)
    fs.register_roots(roots)
    assert fs.registered_roots() == roots


def test_a_temporary_folder_beside_a_tree_of_its_own_stays_guarded(tmp_path):
    root, outside = tmp_path / "project", tmp_path / "outside"
    (root / "envs").mkdir(parents=True)
    outside.mkdir()
    fs.register_root(root, what="the project", own_trees=(("envs", "*"),))
    os.symlink(outside, root / "envs" / ".cpu.tmp-1")
    with pytest.raises(BadInput, match="symbolic link"):
        fs.write_atomic(root / "envs" / ".cpu.tmp-1" / "marker", b"x")
    assert list(outside.iterdir()) == []
