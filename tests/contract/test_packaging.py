"""A wheel of the resolver carries recipes/ and patches/, and an installed copy finds them."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile

from support import REPO


def test_wheel_ships_recipes_and_patches_and_finds_them_installed(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path / "dist"), str(REPO)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("mamba_resolver-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tracked = subprocess.run(["git", "ls-files", "recipes", "patches"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    for path in tracked:
        assert any(n.endswith(f".data/data/share/mamba-resolver/{path}") for n in names), f"{path} not in the wheel"

    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = next(env.glob("lib/python3*/site-packages"))
    with zipfile.ZipFile(wheel) as zf:  # a plain unpack, as an installer does (no network, no pip needed)
        for name in zf.namelist():
            if ".data/data/" in name:
                target = env / name.split(".data/data/", 1)[1]
            else:
                target = site / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    code = ("from resolver.core.resources import shipped; from resolver.patch import load_registry; "
            "from resolver.kernels.packages import RECIPES; "
            "print(shipped('patches')); print([p.id for p in load_registry().patches]); "
            "print(RECIPES if (RECIPES / 'mamba-ssm' / 'recipe.yaml').is_file() else 'missing')")
    done = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, ids, recipes = done.stdout.splitlines()
    assert where == str(env / "share" / "mamba-resolver" / "patches")
    assert "rocm6.0-bf16-inline" in ids
    assert recipes == str(env / "share" / "mamba-resolver" / "recipes")
