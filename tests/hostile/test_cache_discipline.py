"""Every cache and state file the resolver keeps (resolver.project.paths.RECORD_KINDS) is read as untrusted
data: a crafted one of each kind is ignored, through the real code that reads it, and the answer is
the one computed without it. Crafted four ways: a symbolic link to a record outside (never followed,
never written through), a FIFO (never blocks), JSON whose values are commands and flags (never run,
never passed on), and a record of the right shape with a planted answer that this user did not write
(another owner, or writable by others: never trusted). And three ways a record arrives with the working
tree: plain JSON as a clone or a pull request brings it, one sealed by this user for another checkout,
one sealed by another user's key (resolver.core.seal: each reads as absent, and the work is done again).
The crafted ones above carry this user's seal, so each is refused for what it is, not for a missing seal."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import DATA, records
from support import channel_factory as cf  # noqa: E402

from resolver.core.seal import seal  # noqa: E402
from resolver.project.paths import RECORD_KINDS, ProjectPaths  # noqa: E402

VARIANTS = ["link", "fifo", "commands", "foreign-writable", "from-a-clone", "another-checkout", "another-key"] \
    + (["foreign-owner"] if os.getuid() == 0 else [])


class Kind:
    """One kind of record: where it is, a planted answer of the right shape, and the real code that reads it."""

    name = ""
    rewritten = False  # whether the code that reads it writes a good record in its place

    def __init__(self, tmp: Path, monkeypatch) -> None:
        self.tmp, self.monkeypatch = tmp, monkeypatch
        self.project = ProjectPaths(tmp / "project")
        self.project.root.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp / "user-cache"))

    def path(self) -> Path:
        raise NotImplementedError

    def planted(self) -> Any:
        """A record of the right shape whose answer would be wrong (or hostile) if it were trusted."""
        raise NotImplementedError

    def use(self) -> Any:
        raise NotImplementedError


def evil(tmp: Path) -> str:
    """A program that leaves a mark when anything runs it."""
    script = tmp / "evil.sh"
    if not script.exists():
        script.write_text(f"#!/bin/sh\ntouch {tmp / 'RAN'}\n")
        script.chmod(0o755)
    return str(script)


def commands(tmp: Path, like: Any) -> Any:
    """``like`` with every string replaced by a flag or a shell command that would run :func:`evil`."""
    hostile = [f"--python={evil(tmp)}", f"$({evil(tmp)})", f"; {evil(tmp)}", f"-e{tmp}", "\x1b]0;x\x07"]
    counter = iter(range(10_000))

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return hostile[next(counter) % len(hostile)]
        if isinstance(value, list):
            return [walk(v) for v in value] + [hostile[0]]
        if isinstance(value, dict):
            return {walk(k) if len(k) != 64 else k: walk(v) for k, v in value.items()} | {hostile[1]: hostile[2]}
        return value
    return walk(like)


# ---------------------------------------------------------------------------------------- the kinds

SHA = "ab" * 32


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    cf.write_wheel(folder, "needs", "1.0", {"needs/__init__.py": ""}, requires=["rtpy>=1"])
    cf.write_wheel(folder, "rtpy", "1.0.0", {"rtpy/__init__.py": ""})
    return folder


class _Pypi(Kind):
    def __init__(self, tmp, monkeypatch, wheels: Path) -> None:
        super().__init__(tmp, monkeypatch)
        for key in [k for k in os.environ if k.startswith("PIP_")]:
            monkeypatch.delenv(key)
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_NO_INDEX", "1")
        self.wheels = wheels

    def use(self) -> Any:
        from resolver.lock import pypi

        request = pypi.PypiRequest(("needs",), python="3.11", platform="linux-64", find_links=(str(self.wheels),))
        return sorted((a.name, a.location, a.sha256, a.requires_dist) for a in
                      pypi.resolve(request, self.project).artifacts)

    def shas(self) -> list[str]:
        from resolver.core.fs import sha256_of

        return [sha256_of(p) for p in sorted(self.wheels.glob("*.whl"))]


class PypiFiles(_Pypi):
    name, rewritten = "pypi-files", True

    def path(self) -> Path:
        return self.project.pypi_files

    def planted(self) -> Any:
        return {sha: {"url": "https://evil.example/x/rtpy-1.0.0-py3-none-any.whl", "file": "rtpy-1.0.0-py3-none-any.whl"}
                for sha in self.shas()}


class PypiRequires(_Pypi):
    name, rewritten = "pypi-requires", True

    def path(self) -> Path:
        return self.project.pypi_requires

    def planted(self) -> Any:
        return {sha: {"requires_dist": ["evil-package>=6.6.6"], "requires_python": None} for sha in self.shas()}


class _Canonical(Kind):
    def __init__(self, tmp, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        from resolver.lock import canonical

        page = tmp / "pypi" / "simple" / "pkg"
        page.mkdir(parents=True, exist_ok=True)
        (page / "index.html").write_text(json.dumps({"files": [
            {"filename": "pkg-1.0-py3-none-any.whl", "url": "../../files/pkg-1.0-py3-none-any.whl",
             "hashes": {"sha256": SHA}}]}))
        self.server = cf.ChannelServer(tmp / "pypi")
        monkeypatch.setenv(canonical.CANONICAL_INDEX_VAR, self.server.url + "simple")  # the session's double steps aside

    def use(self) -> Any:
        from resolver.lock.canonical import Canonicalizer
        from resolver.lock.lockfile import PypiArtifact
        from resolver.project.sources import Sources

        class NoIndex:
            @staticmethod
            def package_index(name: str) -> None:
                return None

        art = PypiArtifact("pkg", "1.0", "file:///srv/wheels/pkg-1.0-py3-none-any.whl", SHA)
        return Canonicalizer(Sources(), self.project).pypi_artifact(art, NoIndex()).location


class CanonicalUrls(_Canonical):
    name, rewritten = "canonical-urls", True

    def path(self) -> Path:
        return self.project.canonical_urls

    def planted(self) -> Any:
        return {SHA: "https://evil.example/pkg-1.0-py3-none-any.whl"}


class CanonicalMisses(_Canonical):
    name = "canonical-misses"

    def path(self) -> Path:
        return self.project.canonical_misses

    def planted(self) -> Any:
        return {SHA: time.time()}  # "PyPI did not have it today": the lock would keep the local path


class EnvBuild(Kind):
    name = "env-build"

    def __init__(self, tmp, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        self.folder = tmp / "cached-build"
        (self.folder / "bin").mkdir(parents=True, exist_ok=True)
        (self.folder / "bin" / "tool").write_text("#!/bin/sh\necho cached\n")

    def path(self) -> Path:
        from resolver.install.template import TEMPLATE_MARKER

        return self.folder / TEMPLATE_MARKER

    def planted(self) -> Any:
        info = (self.folder / "bin" / "tool").stat()
        return {"final": str(self.tmp / "env"), "files": {"bin/tool": [info.st_size, info.st_mtime_ns]}}

    def use(self) -> Any:
        from resolver.install.template import EnvBuild as Cached

        target = self.tmp / f"linked-{time.monotonic_ns()}"
        linked = Cached(self.folder, self.tmp / "env").link_into(target)
        return linked, target.exists()


class ReadyMarker(Kind):
    name = "ready-marker"

    def path(self) -> Path:
        from resolver.install.environment import READY_MARKER

        return self.project.env("cpu") / READY_MARKER

    def planted(self) -> Any:
        return {"environment": "cpu", "kind": "venv", "python": "3.11", "platform": "linux-64",
                "lock_digest": SHA, "conda": [], "pypi": ["torch==6.6.6"]}

    def use(self) -> Any:
        from resolver.install.environment import ready_record

        return ready_record(self.project.env("cpu"))


class _InEnv(Kind):
    def __init__(self, tmp, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        from resolver.install.environment import Environment

        prefix = tmp / "env"
        (prefix / "bin").mkdir(parents=True, exist_ok=True)
        (prefix / "conda-meta").mkdir(exist_ok=True)
        if not (prefix / "bin" / "python").exists():
            (prefix / "bin" / "python").symlink_to(sys.executable)
        (prefix / "conda-meta" / "kern-1.0-h0_0.json").write_text("{}")
        self.env = Environment("cpu", prefix, "conda")


class KernelImport(_InEnv):
    name = "kernel-import"

    def path(self) -> Path:
        return self.project.kernel_import_record("cpu", "kern")

    def planted(self) -> Any:
        from resolver.kernels.into_env import _inputs

        return {"inputs_digest": _inputs(self.env, Path("kern-1.0-h0_0.conda")), "value": ["evil_module"]}

    def use(self) -> Any:
        from resolver.kernels.into_env import verified

        return verified(self.path(), self.env, Path("kern-1.0-h0_0.conda"))


class EnvFacts(_InEnv):
    name, rewritten = "env-facts", True

    def path(self) -> Path:
        return self.project.env_facts_record("cpu")

    def planted(self) -> Any:
        from resolver.core.fingerprint import fingerprint
        from resolver.kernels.envfacts import env_fingerprint

        return {"inputs_digest": fingerprint(str(self.env.path), env_fingerprint(self.env)),
                "value": {"python": "3.11", "executable": evil(self.tmp), "platlib": "lib", "torch": "6.6.6+cu999",
                          "torch_cuda": "99.9", "torch_hip": None, "cxx11_abi": True, "torch_error": None}}

    def use(self) -> Any:
        from resolver.kernels.envfacts import probe_environment

        return probe_environment(self.env, self.path()).to_json()


class VerifyModel(Kind):
    name, rewritten = "verify-model", True

    def path(self) -> Path:
        from resolver.verify.checkpoint import CONFIG_FILE, TinySpec

        return self.project.verify_models / f"verify-model-{TinySpec().key()}" / CONFIG_FILE

    def planted(self) -> Any:
        return {"d_model": 6666, "n_layer": 66}

    def use(self) -> Any:
        from resolver.verify.checkpoint import CONFIG_FILE, WEIGHTS_FILE, default_checkpoint

        folder = default_checkpoint(self.project.verify_models)
        return (folder / CONFIG_FILE).read_bytes(), (folder / WEIGHTS_FILE).read_bytes()


def _plan():
    from resolver.core.model import Request
    from resolver.plan.planning import plan_for
    from resolver.plan.probe.profile import HardwareProfile

    profile = HardwareProfile.from_file(DATA / "profiles" / "v100.json")
    return plan_for(Request(), profile), profile


class PlanRecord(Kind):
    name = "plan-record"

    def path(self) -> Path:
        return self.project.plan_record("cpu")

    def planted(self) -> Any:
        from resolver.plan.locked import plan_key

        plan, _ = _plan()
        data = plan.to_json()
        data["torch"]["source"]["url"] = "https://evil.example/whl"
        return {"plan": data, "key": plan_key(plan), "pythons": {"linux-64": "3.11.7"}, "manifest_env": SHA}

    def use(self) -> Any:
        from resolver.plan import locked

        return locked.read(self.project, "cpu")


class LockCheck(Kind):
    """The remembered "pixi.lock is current" answer: a planted one for a stale lock is not taken."""

    name = "lock-check"

    def __init__(self, tmp: Path, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        from resolver.lock.lockfile import LockedEnv, LockedPlatform, render_lock

        root = self.project.root
        (root / "pixi.toml").write_text('[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n'
                                        '\n[dependencies]\npython = "3.11.*"\n')  # the lock holds no python: stale
        platform = LockedPlatform("linux-64", "linux-64", ())
        (root / "pixi.lock").write_text(render_lock([LockedEnv("default", platform, ("https://conda.anaconda.org/"
                                                                                     "conda-forge/",))], root))

    def path(self) -> Path:
        return self.project.lock_check_stamp

    def planted(self) -> Any:
        from resolver.lock.current import _inputs_digest

        return {"inputs_digest": _inputs_digest(self.project, None), "value": True}  # "these very inputs are current"

    def use(self) -> Any:
        from resolver.lock.current import lock_status

        return [r.kind for r in lock_status(self.project).reasons]


class UpgradeState(Kind):
    name = "upgrade-state"

    def path(self) -> Path:
        return self.project.upgrade_state

    def planted(self) -> Any:
        return {"wanted": {"target": "cpu", "torch": "6.6", "latest": False, "python": None, "env": "cpu"},
                "current": "cpu", "candidate": "cpu-torch6-6", "stage": "proven", "at": time.time(),
                "proof": {"ok": True}, "proof_inputs": SHA}

    def use(self) -> Any:
        """``upgrade --promote`` alone finishes the pending upgrade the state names (else it says there is none)."""
        from resolver.core.errors import ResolverError
        from resolver.workflows.upgrade.journey import UpgradeOptions, _Journey

        try:
            return _Journey(self.project, UpgradeOptions(promote=True), None)._wanted()
        except ResolverError as exc:
            return str(exc)


class StepStamp(Kind):
    name = "step-stamp"

    def path(self) -> Path:
        return self.project.step_stamps / "verify.json"

    def planted(self) -> Any:
        return {"inputs_digest": SHA, "value": {"result": {"ok": True}, "at": time.time()}}

    def use(self) -> Any:
        from resolver.workflows.steps import Stamps

        return Stamps(self.project.step_stamps).is_current("verify", SHA)


class SourcesRecord(Kind):
    name = "sources"

    def path(self) -> Path:
        return self.project.sources_record

    def planted(self) -> Any:
        return {"torch-index": "https://evil.example/whl/{variant}", "find-links": ["/srv/evil"]}

    def use(self) -> Any:
        from resolver.project.sources import Sources

        return Sources.load(self.project.root, environ={}).to_json()


class TimingsRecord(Kind):
    name = "timings"

    def path(self) -> Path:
        return self.project.timings

    def planted(self) -> Any:
        return {"build mamba-ssm": {"seconds": 9.0, "scale": 1}}

    def use(self) -> Any:
        from resolver.project.timings import Timings

        return Timings(self.project.timings).expected("build mamba-ssm")


class _Patch(Kind):
    def __init__(self, tmp, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        from support.patch_support import make_rocm

        if not (tmp / "rocm").exists():
            make_rocm(tmp)
        self.root = tmp / "rocm"


class OverlayRecord(_Patch):
    name, rewritten = "overlay-record", True

    def path(self) -> Path:
        from resolver.patch.overlay import RECORD_NAME

        return self.project.state_dir / "overlay" / "rocm-6.0.2" / RECORD_NAME

    def planted(self) -> Any:
        from support.patch_support import HEADER, sha

        return {"format": 1, "rocm_root": str(self.root), "rocm_version": "6.0.2", "patches": {
            "hip-bf16-static-inline": {"file": HEADER, "source_sha256": sha(self.root / HEADER),
                                       "sha256": sha(self.root / HEADER), "siblings": ["../../../../etc/passwd"],
                                       "forced": False, "header_state": "original", "changes": [], "time": "x"}}}

    def use(self) -> Any:
        from support.patch_support import run_patch

        code, data, err = run_patch(self.project.root, "--rocm-root", str(self.root))
        return code, data and data.get("status")


class PatchRecord(_Patch):
    name = "patch-record"

    def path(self) -> Path:
        from resolver.core.fs import sha256_text

        return self.project.patch_records / f"hip-bf16-static-inline-in-place-{sha256_text(str(self.root))[:12]}.json"

    def planted(self) -> Any:
        from support.patch_support import HEADER, sha

        now = sha(self.root / HEADER)
        return {"patch": "hip-bf16-static-inline", "rocm_root": str(self.root), "file": str(self.root / HEADER),
                "backup": str(self.tmp / "outside.json"), "sha256_before": SHA, "sha256_after": now, "forced": False,
                "header_state": "original", "changes": [], "state": "applied", "time": "x"}

    def use(self) -> Any:
        from support.patch_support import run_patch

        code, data, err = run_patch(self.project.root, "--rocm-root", str(self.root), "--in-place", "--revert")
        return code, data and data.get("status")


class VerifiedRecord(Kind):
    name = "verified-record"

    def __init__(self, tmp, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        from resolver.tools import store as store_module
        from resolver.tools.store import VerifiedStore

        self.store = VerifiedStore(tmp / "store")
        self.source = cf.write_wheel(tmp / "wheels", "tiny", "1.0", {"tiny/__init__.py": ""})
        from resolver.core.fs import sha256_of

        self.sha = sha256_of(self.source)
        self.hashed: list[Path] = []
        real = store_module.sha256_of
        monkeypatch.setattr(store_module, "sha256_of", lambda p: (self.hashed.append(Path(p)), real(p))[1])
        self.target = self.store.copy_in(self.source, self.sha, self.source.name)
        self.path().unlink()  # the baseline: a stored file with no record of its check

    def path(self) -> Path:
        from resolver.tools.store import RECORD

        return self.target.parent / RECORD

    def planted(self) -> Any:
        from resolver.tools.store import _identity

        return {"inputs_digest": _identity(self.target.stat()), "value": self.sha}

    def use(self) -> Any:
        before = len(self.hashed)
        found = self.store.find(self.sha, self.source.name)
        hashed = len(self.hashed) - before
        if self.path().exists() or self.path().is_symlink():
            self.path().unlink()  # the next use starts from no record, as the first did
        return found, hashed


class PlanMemo(Kind):
    name, rewritten = "plan-memo", True

    def path(self) -> Path:
        from resolver.plan.planning import PlanMemo as Memo

        plan, profile = _plan()
        return Memo(profile, "auto", None).file

    def planted(self) -> Any:
        from resolver.plan.planning import PlanMemo as Memo

        plan, profile = _plan()
        data = plan.to_json()
        data["torch"]["source"]["url"] = "https://evil.example/whl"
        return {"inputs_digest": Memo(profile, "auto", None).inputs, "value": data}

    def use(self) -> Any:
        return _plan()[0].to_json()


class ToolAnswers(Kind):
    name, rewritten = "tool-answers", True

    def __init__(self, tmp, monkeypatch) -> None:
        super().__init__(tmp, monkeypatch)
        from resolver.plan.probe import system

        self.bin = tmp / "bin"
        self.bin.mkdir(exist_ok=True)
        nvcc = self.bin / "nvcc"
        if not nvcc.exists():
            nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.6, V12.6.85'\n")
            nvcc.chmod(0o755)
        monkeypatch.setattr(system, "_ANSWERS", [])
        self.nvcc = nvcc

    def path(self) -> Path:
        from resolver.project.paths import tool_answers

        return tool_answers()

    def planted(self) -> Any:
        from resolver.plan.probe.system import _answer_key

        return {_answer_key(str(self.nvcc), ["nvcc", "--version"], {"PATH": str(self.bin)}):
                [0, "Cuda compilation tools, release 99.9", ""]}

    def use(self) -> Any:
        from resolver.plan.probe import system

        system._ANSWERS.clear()
        return system.LiveSystem({"PATH": str(self.bin)}).run(["nvcc", "--version"]).stdout


KINDS = [PypiFiles, PypiRequires, CanonicalUrls, CanonicalMisses, EnvBuild, ReadyMarker, KernelImport, EnvFacts,
         VerifyModel, PlanRecord, LockCheck, UpgradeState, StepStamp, SourcesRecord, OverlayRecord, PatchRecord,
         VerifiedRecord, PlanMemo, ToolAnswers, TimingsRecord]


def test_every_declared_kind_of_record_has_a_crafted_file_test():
    assert sorted(k.name for k in KINDS) == sorted(RECORD_KINDS)


# ------------------------------------------------------------------------------------------ the test


def _plant(path: Path, variant: str, planted: Any, tmp: Path) -> Path:
    """Put the crafted record at ``path``; the file outside it may point at (for a link)."""
    outside = tmp / "outside.json"
    outside.write_bytes(seal(path, json.dumps(planted).encode()))  # sealed for the place the link is at
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    if variant == "link":
        path.symlink_to(outside)
    elif variant == "fifo":
        os.mkfifo(path)
    elif variant == "commands":
        records.plant_text(path, json.dumps(commands(tmp, planted)))
    elif variant == "from-a-clone":
        records.unsealed(path, planted)
    elif variant == "another-checkout":
        path.write_bytes(seal(tmp / "another-checkout" / path.name, json.dumps(planted).encode()))
    elif variant == "another-key":
        cache = os.environ["XDG_CACHE_HOME"]
        os.environ["XDG_CACHE_HOME"] = str(tmp / "another-users-cache")
        try:
            path.write_bytes(seal(path, json.dumps(planted).encode()))
        finally:
            os.environ["XDG_CACHE_HOME"] = cache
    else:
        records.plant_text(path, json.dumps(planted))
        if variant == "foreign-writable":
            path.chmod(0o666)
        else:
            os.chown(path, 65534, 65534)
    return outside


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_a_crafted_record_is_ignored(kind, variant, tmp_path, monkeypatch, request):
    args = (request.getfixturevalue("wheelhouse"),) if issubclass(kind, _Pypi) else ()
    record = kind(tmp_path, monkeypatch, *args)
    try:
        baseline = record.use()  # computed with no record (and writing one where the kind does)
        path = record.path()
        outside = _plant(path, variant, record.planted(), tmp_path)
        before = (outside.read_bytes(), outside.stat().st_mtime_ns)
        signal.signal(signal.SIGALRM, lambda *_: pytest.fail(f"reading a {variant} {kind.name} blocked"))
        signal.alarm(60)
        try:
            got = record.use()
        finally:
            signal.alarm(0)
        assert got == baseline
        assert not (tmp_path / "RAN").exists()  # nothing it named ran
        assert (outside.read_bytes(), outside.stat().st_mtime_ns) == before  # nothing outside changed
        if record.rewritten:  # what the code wrote in its place is its own record again
            assert path.is_file() and not path.is_symlink() and path.stat().st_uid == os.getuid()
            assert not path.stat().st_mode & 0o022
    finally:
        server = getattr(record, "server", None)
        if server is not None:
            server.close()


def test_a_record_this_user_wrote_is_trusted(tmp_path, monkeypatch):
    """The control: the same planted records, written by this user with the resolver's own mode, are
    taken (which is why the variants above are refused for what they are, not for their content)."""
    for kind in (PlanMemo, StepStamp, SourcesRecord, ToolAnswers, VerifiedRecord, UpgradeState, TimingsRecord):
        record = kind(tmp_path / kind.name, monkeypatch)
        baseline = record.use()
        path = record.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        records.plant_text(path, json.dumps(record.planted()))
        assert record.use() != baseline, kind.name
