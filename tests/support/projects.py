"""The one way a test makes a project: a folder with a pixi.toml, and what it asks for beside it (a
pixi.lock, a local conda channel's platform, a mirror of PyTorch's CPU index, a wheelhouse, more files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from support import shipped_manifest


def torch_cpu_mirror() -> Path | None:
    """The local folder pip's configuration here takes torch 2.13.0+cpu from (a wheelhouse), if any: it
    mirrors https://download.pytorch.org/whl/cpu, which these machines cannot reach."""
    from resolver.lock.pipconfig import read_pip_config

    for folder in read_pip_config().local_folders:
        if list(Path(folder).glob("torch-2.13.0+cpu-*.whl")):
            return Path(folder)
    return None


def conda_workspace(text: str, toolchain: Path, torch_mirror: Path | None = None) -> str:
    """A pixi.toml text whose workspace declares the glibc the toolchain channel's python needs and,
    given ``torch_mirror``, maps PyTorch's CPU index to it under [tool.resolver.mirrors]."""
    from support import toolchain_channel

    text = text.replace('platforms = ["linux-64"]', f"platforms = [{toolchain_channel.platform_entry(toolchain)}]", 1)
    if torch_mirror is not None:
        text = text.replace("[tool.resolver.mirrors]\n",
                            f'[tool.resolver.mirrors]\n"https://download.pytorch.org/whl/cpu" = "{torch_mirror}"\n', 1)
    return text


def project(root: Path, manifest: str | None = None, *, lock: str | Sequence | None = None,
            toolchain: Path | None = None, torch_mirror: Path | None = None, channels: Sequence[str] = (),
            wheelhouse: bool = False, files: Mapping[str, str] = {}) -> Path:  # noqa: B006 - never changed
    """The project folder ``root`` (made if missing), returned.

    ``manifest``: its pixi.toml text (default: the shipped one, ``support.shipped_manifest``; "" writes none); ``lock``: its pixi.lock,
    a text or the locked environments (the resolver's own writer renders them); ``toolchain``: a local
    conda channel (tests/support/toolchain_channel.py) whose platform the workspace declares, with
    ``torch_mirror`` as the mirror of PyTorch's CPU index; ``channels``: conda channels added after the
    manifest's first ``channels = ["conda-forge"]``; ``wheelhouse``: the factory's wheels in ``wheels/``;
    ``files``: more files, by path inside the project.
    """
    root.mkdir(parents=True, exist_ok=True)
    text = shipped_manifest() if manifest is None else manifest
    if toolchain is not None:
        text = conda_workspace(text, toolchain, torch_mirror)
    if channels:
        listed = ", ".join(f'"{channel}"' for channel in ("conda-forge", *channels))
        assert 'channels = ["conda-forge"]' in text, "the manifest lists no conda-forge channel to add to"
        text = text.replace('channels = ["conda-forge"]', f"channels = [{listed}]", 1)
    if text:
        (root / "pixi.toml").write_text(text)
    if lock is not None:
        if not isinstance(lock, str):
            from resolver.lock.lockfile import render_lock

            lock = render_lock(list(lock), root)
        (root / "pixi.lock").write_text(lock, encoding="utf-8")
    if wheelhouse:
        from support import channel_factory

        channel_factory.build_wheelhouse(root / "wheels")
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return root
