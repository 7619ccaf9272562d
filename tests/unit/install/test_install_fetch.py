"""Where install takes a locked artefact from (resolver.install.fetch), in process and without a network:
the order of the places it looks, the folders a lock may make it read, and the one sentence each failure
gives. The download itself is covered by tests/unit/tools/test_store.py (a loopback server)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from resolver.core.errors import BadInput, IntegrityError
from resolver.install.fetch import Finder, _folder_of, _mirrored, manifest_folders, verified_copy
from resolver.project.sources import Sources
from resolver.tools.store import VerifiedStore

WHEEL = "tiny-1.0-py3-none-any.whl"
URL = f"https://files.example.org/packages/{WHEEL}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put(folder: Path, name: str = WHEEL, data: bytes = b"wheel bytes") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


def test_a_mirrored_location_is_a_path_with_its_quoted_name_unquoted():
    assert _mirrored("/srv/w/torch-2.1%2Bcpu.whl") == "/srv/w/torch-2.1+cpu.whl"
    assert _mirrored("file:///srv/w/a%20b.whl") == "/srv/w/a b.whl"
    assert _mirrored("https://mirror.example/w/a%2Bb.whl") == "https://mirror.example/w/a%2Bb.whl"


def test_the_folder_a_location_names():
    assert _folder_of("/srv/wheels") == Path("/srv/wheels")
    assert _folder_of("file:///srv/wheels") == Path("/srv/wheels")
    assert _folder_of("~/wheels") is None  # a name-like location is not a path (local_path reads / and file://)
    assert _folder_of("https://pypi.org/simple") is None
    assert _folder_of("conda-forge") is None
    assert _folder_of("/") is None and _folder_of("file:///") is None  # the whole disk is never a declared folder


def test_the_declared_roots_are_every_local_place_and_nothing_remote(tmp_path):
    sources = Sources(find_links=(str(tmp_path / "links"), "https://remote.example/links"),
                      extra_index_urls=((tmp_path / "index").as_uri(), "https://remote.example/simple"),
                      mirrors=(("https://files.example.org", str(tmp_path / "mirror")),),
                      conda_channels=(str(tmp_path / "channel"), "conda-forge"))
    finder = Finder(sources, local_folders=(str(tmp_path / "pip-links"),),
                    channels=("https://conda.anaconda.org/conda-forge/",), declared=(str(tmp_path / "declared"),))
    assert finder.folders == (str(tmp_path / "links"), (tmp_path / "index").as_uri(), str(tmp_path / "pip-links"))
    assert finder.channel_mirrors == (("https://conda.anaconda.org/conda-forge/", (tmp_path / "channel").as_uri() + "/"),)
    assert finder.roots == tuple(str(tmp_path / n) for n in ("links", "index", "pip-links", "channel", "mirror",
                                                             "declared"))


def test_a_folder_named_twice_is_one_root(tmp_path):
    finder = Finder(Sources(find_links=(str(tmp_path),)), local_folders=(str(tmp_path),), declared=(str(tmp_path),))
    assert finder.folders == (str(tmp_path),) and finder.roots == (str(tmp_path),)


def test_a_channel_without_a_mirror_adds_no_candidate():
    finder = Finder(Sources(), channels=("https://conda.anaconda.org/conda-forge/",))
    assert finder.channel_mirrors == ()
    assert finder.roots == ()


def test_declares_is_inside_a_root_not_a_prefix_of_it(tmp_path):
    finder = Finder(Sources(), declared=(str(tmp_path / "envs"),))
    assert finder.declares(tmp_path / "envs" / "x.whl")
    assert finder.declares(tmp_path / "envs")
    assert not finder.declares(tmp_path / "envs-evil" / "x.whl")
    assert not finder.declares(tmp_path / "x.whl")


def test_candidates_local_places_first_then_the_download(tmp_path):
    links = tmp_path / "links"
    put(links)
    channel_mirror = tmp_path / "cf"
    sources = Sources(find_links=(str(links),), mirrors=(("https://files.example.org/packages", str(tmp_path / "m")),),
                      conda_channels=(str(channel_mirror),))
    finder = Finder(sources, channels=("https://files.example.org/",))
    assert finder.candidates(URL) == [str(channel_mirror / "packages" / WHEEL), str(tmp_path / "m" / WHEEL), str(links / WHEEL)]


def test_candidates_of_a_remote_url_end_with_the_url_itself(tmp_path):
    finder = Finder(Sources(find_links=(str(tmp_path / "empty"),)))
    assert finder.candidates(URL) == [URL]  # nothing local holds it: downloaded from where the lock says


def test_candidates_of_a_local_url_start_with_it_and_never_download(tmp_path):
    here = put(tmp_path / "wheelhouse")
    finder = Finder(Sources())
    assert finder.candidates(here.as_uri()) == [str(here)]
    assert finder.candidates(str(here)) == [str(here)]


def test_candidates_through_a_mirror_of_the_url(tmp_path):
    sources = Sources(mirrors=(("https://files.example.org", "https://mirror.example/pypi"),))
    assert Finder(sources).candidates(URL) == [f"https://mirror.example/pypi/packages/{WHEEL}"]


def test_candidates_from_a_local_index_page(tmp_path):
    index = tmp_path / "index"
    put(index / "files")
    page = index / "tiny-pkg" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="../files/{WHEEL}#sha256=00">x</a> <a href="../files/other.whl">y</a>')
    finder = Finder(Sources(extra_index_urls=(index.as_uri(),)))
    assert finder.candidates(URL, "Tiny_Pkg") == [str(index / "files" / WHEEL), URL]
    assert finder.candidates(URL, "Tiny.Pkg") == [str(index / "files" / WHEEL), URL]
    assert finder.candidates(URL) == [URL]  # no project name: the index is not searched
    assert finder.candidates(URL, "absent") == [URL]


def test_an_index_page_entry_must_exist_and_be_escaped_as_html(tmp_path):
    index = tmp_path / "index"
    name = "a&b-1.0-py3-none-any.whl"
    put(index / "files", name)
    page = index / "ab" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="../files/a&amp;b-1.0-py3-none-any.whl">x</a> <a href="../files/{WHEEL}">gone</a>')
    finder = Finder(Sources(extra_index_urls=(str(index),)))
    assert finder.candidates(f"https://h/{name}", "ab") == [str(index / "files" / name), f"https://h/{name}"]
    assert finder.candidates(URL, "ab") == [URL]  # linked but not there


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link"])
def test_a_local_index_page_that_is_not_a_regular_file_is_one_sentence(tmp_path, kind):
    """A FIFO would block install forever, a link to /dev/zero would fill memory: each is refused without
    reading it (exit 3); the lock's own local listing is read the same way."""
    import os
    import time

    from resolver.lock.pypi import _listing

    index = tmp_path / "index"
    page = index / "tiny" / "index.html"
    page.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(page)
    else:
        page.symlink_to("/dev/zero")
    started = time.monotonic()
    with pytest.raises(BadInput, match="index.html") as caught:
        Finder(Sources(extra_index_urls=(str(index),))).candidates(URL, "tiny")
    assert caught.value.code == 3
    with pytest.raises(BadInput, match="index.html"):
        _listing(index.as_uri(), "tiny", "1.0")
    assert time.monotonic() - started < 5


def test_an_index_page_is_read_once(tmp_path):
    index = tmp_path / "index"
    put(index / "files")
    page = index / "tiny" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="../files/{WHEEL}">x</a>')
    finder = Finder(Sources(extra_index_urls=(str(index),)))
    assert finder.candidates(URL, "tiny")[0] == str(index / "files" / WHEEL)
    page.write_text("")
    assert finder.candidates(URL, "tiny")[0] == str(index / "files" / WHEEL)


def test_a_file_a_declared_local_index_links_outside_its_folder_is_read(tmp_path):
    """A PEP 503 index's hrefs may leave its own folder (``simple/<project>/`` -> ``../../files/``, as pip's
    configuration names ``.../simple``): the index declares the files it links, and only those."""
    data = b"the real wheel"
    linked = put(tmp_path / "mirror" / "files", data=data)
    stray = put(tmp_path / "mirror" / "elsewhere", data=data)
    page = tmp_path / "mirror" / "simple" / "tiny" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="../../files/{WHEEL}">x</a>')
    finder = Finder(Sources(), local_folders=(str(tmp_path / "mirror" / "simple"),))
    assert not finder.declares(linked) and not finder.declares(stray)  # before the page is read: only the folder
    got = verified_copy(URL, sha(data), VerifiedStore(tmp_path / "store"), finder, name="tiny")
    assert got.read_bytes() == data
    assert finder.declares(linked) and not finder.declares(stray)


@pytest.mark.parametrize("recorded", ["", "0" * 63, "A" * 64, "0" * 64 + "\n", None])
def test_a_lock_without_a_usable_sha256_is_refused(tmp_path, recorded):
    with pytest.raises(IntegrityError, match=f"records no usable sha256 for {WHEEL}") as caught:
        verified_copy(URL, recorded, VerifiedStore(tmp_path / "store"), Finder(Sources()))
    assert caught.value.fix == "relock with `python -m resolver lock` (it records one for every artefact)"


def test_a_copy_comes_from_a_declared_folder_into_the_store(tmp_path):
    data = b"the real wheel"
    source = put(tmp_path / "links", data=data)
    store = VerifiedStore(tmp_path / "store")
    got = verified_copy(URL, sha(data), store, Finder(Sources(find_links=(str(source.parent),))))
    assert got.read_bytes() == data and got.name == WHEEL and str(got).startswith(str(tmp_path / "store"))
    source.unlink()  # the store's copy serves from now on
    assert verified_copy(URL, sha(data), store, Finder(Sources())) == got


def test_a_wrong_copy_is_skipped_for_a_right_one(tmp_path):
    data = b"the real wheel"
    put(tmp_path / "a", data=b"something else")
    put(tmp_path / "b", data=data)
    finder = Finder(Sources(find_links=(str(tmp_path / "a"), str(tmp_path / "b"))))
    assert verified_copy(URL, sha(data), VerifiedStore(tmp_path / "store"), finder).read_bytes() == data


def test_only_wrong_copies_is_an_integrity_error_naming_the_first(tmp_path):
    put(tmp_path / "a", data=b"one")
    put(tmp_path / "b", data=b"two")
    finder = Finder(Sources(find_links=(str(tmp_path / "a"), str(tmp_path / "b"))))
    wanted = sha(b"real")
    lock_says = (tmp_path / "elsewhere" / WHEEL).as_uri()  # a remote URL would be downloaded after the local copies
    with pytest.raises(IntegrityError) as caught:
        verified_copy(lock_says, wanted, VerifiedStore(tmp_path / "store"), finder)
    assert caught.value.message == (f"{WHEEL} does not match pixi.lock (sha256 {wanted[:12]}… expected; found "
                                 f"{tmp_path / 'a' / WHEEL} (sha256 {sha(b'one')[:12]}…))")
    assert caught.value.fix == ("restore the original file (or delete it from the mirror) and install again; if the "
                                "source really changed, relock with `python -m resolver lock`")


def test_a_location_outside_every_declared_folder_is_not_read(tmp_path):
    data = b"a file of the user's"
    secret = put(tmp_path / "home", data=data)
    finder = Finder(Sources(), declared=(str(tmp_path / "project"), str(tmp_path / "channel")))
    with pytest.raises(BadInput) as caught:
        verified_copy(secret.as_uri(), sha(data), VerifiedStore(tmp_path / "store"), finder)
    assert caught.value.message == (f"pixi.lock locates {WHEEL} at {secret}, outside every folder this project declares "
                                    f"({tmp_path / 'project'}, {tmp_path / 'channel'}); it is not read")
    assert caught.value.fix == ("declare the folder that holds it (find-links or mirrors in [tool.resolver] of pixi.toml, "
                                "RESOLVER_FIND_LINKS, or a conda channel), or restore pixi.lock from version control")
    with pytest.raises(BadInput, match=r"declares \(none\)"):
        verified_copy(secret.as_uri(), sha(data), VerifiedStore(tmp_path / "store"), Finder(Sources()))


def test_an_undeclared_location_beside_a_wrong_copy_reports_the_wrong_copy(tmp_path):
    secret = put(tmp_path / "home", data=b"x")
    put(tmp_path / "links", data=b"wrong")
    finder = Finder(Sources(find_links=(str(tmp_path / "links"),)))
    with pytest.raises(IntegrityError, match="does not match pixi.lock"):
        verified_copy(secret.as_uri(), sha(b"x"), VerifiedStore(tmp_path / "store"), finder)


def test_an_undeclared_location_is_passed_over_for_a_declared_copy(tmp_path):
    data = b"wheel"
    secret = put(tmp_path / "home", data=data)
    put(tmp_path / "links", data=data)
    finder = Finder(Sources(find_links=(str(tmp_path / "links"),)))
    got = verified_copy(secret.as_uri(), sha(data), VerifiedStore(tmp_path / "store"), finder)
    assert got.read_bytes() == data


def test_a_declared_location_that_is_gone_is_nowhere_to_be_found(tmp_path):
    gone = tmp_path / "links" / WHEEL
    gone.parent.mkdir()
    finder = Finder(Sources(find_links=(str(gone.parent),)))
    with pytest.raises(BadInput) as caught:
        verified_copy(gone.as_uri(), sha(b"x"), VerifiedStore(tmp_path / "store"), finder)
    assert caught.value.message == f"locked file {WHEEL} is nowhere to be found ({gone.as_uri()})"
    assert caught.value.fix == ("restore the wheelhouse/channel it came from, add a [tool.resolver.mirrors] entry for it, "
                                "or run `python -m resolver lock` again")


def test_a_folder_where_the_file_should_be_is_not_a_copy(tmp_path):
    (tmp_path / "links" / WHEEL).mkdir(parents=True)
    finder = Finder(Sources(find_links=(str(tmp_path / "links"),)))
    with pytest.raises(BadInput, match="nowhere to be found"):
        verified_copy((tmp_path / "links" / WHEEL).as_uri(), sha(b"x"), VerifiedStore(tmp_path / "store"), finder)


def test_the_folders_a_manifest_declares(tmp_path):
    (tmp_path / "pixi.toml").write_text(
        '[workspace]\nname = "p"\nchannels = ["./channel", "conda-forge"]\nplatforms = ["linux-64"]\n'
        '[pypi-options]\nfind-links = [{ path = "../links" }, { path = "./here" }]\nindex-url = "https://pypi.org/simple"\n'
        'extra-index-urls = ["file:///srv/index"]\n')
    assert manifest_folders(tmp_path, "default") == (str(tmp_path / "channel"), "conda-forge", str(tmp_path / "../links"),
                                                     str(tmp_path / "./here"), "file:///srv/index", "https://pypi.org/simple")
    (tmp_path / "pixi.toml").write_text('[workspace]\nname = "p"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n')
    assert manifest_folders(tmp_path, "default") == ("conda-forge",)  # no index named: none listed


def test_no_manifest_or_a_broken_one_declares_nothing(tmp_path):
    assert manifest_folders(tmp_path, "default") == ()
    (tmp_path / "pixi.toml").write_text("[workspace\n")
    assert manifest_folders(tmp_path, "default") == ()


def test_a_find_links_file_url_is_a_folder_looked_in(tmp_path):
    put(tmp_path / "links")
    finder = Finder(Sources(find_links=((tmp_path / "links").as_uri(),)))
    assert finder.candidates(URL) == [str(tmp_path / "links" / WHEEL), URL]


def test_a_relative_local_folder_is_taken_from_the_working_folder(tmp_path, monkeypatch):
    put(tmp_path / "links")
    monkeypatch.chdir(tmp_path)
    assert Finder(Sources(), local_folders=("links",)).candidates(URL) == [str(Path("links") / WHEEL), URL]


def test_an_index_page_that_is_not_utf8_is_still_read(tmp_path):
    index = tmp_path / "index"
    put(index / "files", "a b-1.0-py3-none-any.whl")  # a link may hold a space, as written
    page = index / "ab" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_bytes(b"<p>\xff\xfe</p><a href=\"../files/a b-1.0-py3-none-any.whl\">x</a>")
    url = "https://h/a%20b-1.0-py3-none-any.whl"
    assert Finder(Sources(extra_index_urls=(str(index),))).candidates(url, "ab")[0] == \
        str(index / "files" / "a b-1.0-py3-none-any.whl")


def test_an_index_page_is_read_up_to_4_mib(tmp_path):
    index = tmp_path / "index"
    put(index / "files")
    page = index / "tiny" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(" " * (4 << 20) + f'<a href="../files/{WHEEL}">x</a>')
    assert Finder(Sources(extra_index_urls=(str(index),))).candidates(URL, "tiny") == [URL]


def test_a_copy_is_found_through_a_local_index_page(tmp_path):
    data = b"indexed wheel"
    index = tmp_path / "index"
    put(index / "files", data=data)
    page = index / "tiny" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="../files/{WHEEL}">x</a>')
    lock_says = (tmp_path / "gone" / WHEEL).as_uri()
    finder = Finder(Sources(extra_index_urls=(str(index),)))
    assert verified_copy(lock_says, sha(data), VerifiedStore(tmp_path / "store"), finder, name="tiny").read_bytes() == data


def test_a_file_url_mirror_that_lacks_the_file_is_nowhere_to_be_found(tmp_path):
    (tmp_path / "m").mkdir()
    finder = Finder(Sources(mirrors=(("https://files.example.org", (tmp_path / "m").as_uri()),)))
    assert finder.candidates(URL) == [str(tmp_path / "m" / "packages" / WHEEL),
                                      (tmp_path / "m").as_uri() + f"/packages/{WHEEL}"]
    with pytest.raises(BadInput, match="nowhere to be found"):
        verified_copy(URL, sha(b"x"), VerifiedStore(tmp_path / "store"), finder)


BODY = b"downloaded wheel"


@pytest.fixture
def mirror_served(tmp_path):
    """A mirror on a loopback server: the wheel, and another name with the same bytes."""
    from support import channel_factory as cf

    for name in (WHEEL, WHEEL.replace("tiny", "other")):
        put(tmp_path / "site" / "mirror" / "packages", name, BODY)
    server = cf.ChannelServer(tmp_path / "site")
    yield server
    server.close()


def test_what_nothing_local_holds_is_downloaded_through_its_mirror_and_checked(tmp_path, mirror_served):
    finder = Finder(Sources(mirrors=(("https://files.example.org", mirror_served.url + "mirror"),)))
    seen = []
    got = verified_copy(URL, sha(BODY), VerifiedStore(tmp_path / "store"), finder,
                        progress=lambda what, done, total, started, **_: seen.append((what, done, total)))
    assert got.read_bytes() == BODY and got.name == WHEEL
    assert mirror_served.requests == [f"GET /mirror/packages/{WHEEL}"]
    assert seen and seen[-1] == (f"downloading {WHEEL}", len(BODY), len(BODY))
    with pytest.raises(IntegrityError):
        verified_copy(URL.replace("tiny", "other"), sha(b"not what is served"), VerifiedStore(tmp_path / "store"), finder)


def test_a_declared_location_that_is_gone_gives_way_to_a_copy_elsewhere(tmp_path):
    data = b"wheel"
    (tmp_path / "lockdir").mkdir()
    put(tmp_path / "links", data=data)
    finder = Finder(Sources(find_links=(str(tmp_path / "lockdir"), str(tmp_path / "links"))))
    got = verified_copy((tmp_path / "lockdir" / WHEEL).as_uri(), sha(data), VerifiedStore(tmp_path / "store"), finder)
    assert got.read_bytes() == data


@pytest.mark.parametrize("name", ["passwd", "id_rsa", "shadow.whl", "notes-1.0.txt"])
def test_a_declared_folder_is_no_hash_oracle_over_files_that_are_not_packages(tmp_path, name):
    """`find-links = ["/etc"]` in a shared pixi.toml and a lock naming a file there: install reads only
    package files (a wheel, an sdist, a conda package), so whether the lock's sha256 is the file's own
    changes nothing: the same sentence, exit 4, the file never opened (a FIFO there would hang a read)."""

    secrets = tmp_path / "etc"
    secrets.mkdir()
    (secrets / name).write_bytes(b"root:x:0:0\n")
    finder = Finder(Sources(find_links=(str(secrets),)), declared=(str(secrets),))
    answers = []
    for recorded in (sha(b"root:x:0:0\n"), "0" * 64):
        for url in (f"https://files.example.org/{name}", (secrets / name).as_uri(), str(secrets / name)):
            with pytest.raises(IntegrityError, match="which is not a package file") as caught:
                verified_copy(url, recorded, VerifiedStore(tmp_path / "store"), finder)
            answers.append((caught.value.code, caught.value.message.replace(url, "")))
    assert len({code for code, _ in answers}) == 1 and answers[0][0] == 4
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob(name))


def test_a_fifo_named_in_a_lock_is_never_opened(tmp_path):
    import os

    folder = tmp_path / "links"
    folder.mkdir()
    os.mkfifo(folder / "passwd")
    with pytest.raises(IntegrityError, match="which is not a package file"):
        verified_copy(str(folder / "passwd"), "0" * 64, VerifiedStore(tmp_path / "store"),
                      Finder(Sources(find_links=(str(folder),))))
