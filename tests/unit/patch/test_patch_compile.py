"""Real compiles with g++ on the synthetic ROCm tree: the defect links wrong, the overlay shadows the
header (angle-bracket include from hip/hip_bf16.h) and links right, and the overlay's sibling links
are what make the fixed header's quoted includes resolve."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.patch_support import FIXTURES, HEADER, SIX, make_rocm, run_patch

GXX = shutil.which("g++")
CLANG = next((found for found in map(shutil.which, ("clang++", "clang++-19", "clang++-18", "clang++-17", "clang++-16",
                                                    "clang++-15", "clang++-14")) if found), None)
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")
COMPILERS = [pytest.param("g++", id="g++"),
             pytest.param("clang++", id="clang++",
                          marks=pytest.mark.skipif(CLANG is None, reason="no clang++ here (hipcc is clang)"))]

UNIT_A = """#include <hip/hip_bf16.h>
float lane_low(float x, float y) { return __low2float(__float22bfloat162_rn(float2{x, y})); }
"""
UNIT_B = """#include <hip/hip_bf16.h>
float lane_low(float x, float y);
int main() {
  __hip_bfloat162 pair = __float22bfloat162_rn(float2{1.5f, 2.0f});
  float2 back = __bfloat1622float2(pair);
  bool ok = lane_low(1.5f, 2.0f) == 1.5f && __high2float(pair) == 2.0f && back.y == 2.0f
            && __double2bfloat16(2.0).data == __float2bfloat16(2.0f).data;
  return ok ? 0 : 1;
}
"""


def _sources(folder: Path) -> list[str]:
    (folder / "a.cpp").write_text(UNIT_A)
    (folder / "b.cpp").write_text(UNIT_B)
    return [str(folder / "a.cpp"), str(folder / "b.cpp")]


def _gxx(*args: str, cwd: Path, compiler: str = "g++") -> subprocess.CompletedProcess:
    program = GXX if compiler == "g++" else CLANG
    return subprocess.run([program, "-std=c++17", *args], capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.fixture
def patched(tmp_path):
    root = make_rocm(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    code, data, err = run_patch(project, "--rocm-root", str(root))
    assert code == 0, err
    return root, Path(data["include_dir"]), tmp_path


@pytest.mark.parametrize("compiler", COMPILERS)
def test_original_header_fails_to_link_with_the_six_duplicates_and_overlay_links(patched, compiler):
    root, include, folder = patched
    sources = _sources(folder)
    plain = _gxx(f"-I{root / 'include'}", *sources, "-o", "plain", cwd=folder, compiler=compiler)
    assert plain.returncode != 0
    duplicated = {name for name in SIX if f"multiple definition of `{name}" in plain.stderr}
    assert duplicated == set(SIX), plain.stderr[-2000:]
    fixed = _gxx(f"-I{include}", f"-I{root / 'include'}", *sources, "-o", "fixed", cwd=folder, compiler=compiler)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert subprocess.run([str(folder / "fixed")], timeout=30).returncode == 0


def test_overlay_header_is_the_one_the_preprocessor_reads(patched):
    root, include, folder = patched
    _sources(folder)
    out = _gxx("-E", f"-I{include}", f"-I{root / 'include'}", "a.cpp", cwd=folder)
    assert out.returncode == 0, out.stderr
    opened = [line.split('"')[1] for line in out.stdout.splitlines() if line.startswith("# 1 \"")]
    bf16 = [p for p in opened if p.endswith("amd_hip_bf16.h")]
    assert bf16 == [str(include / "hip" / "amd_detail" / "amd_hip_bf16.h")]
    assert str(root / "include" / "hip" / "hip_bf16.h") in opened  # the includer stays ROCm's own
    assert "static inline __hip_bfloat16 __float2bfloat16" in out.stdout


def test_quoted_sibling_includes_need_the_overlay_links(patched):
    root, include, folder = patched
    sources = _sources(folder)
    siblings = [p for p in (include / "hip" / "amd_detail").iterdir() if p.is_symlink()]
    assert {p.name for p in siblings} == {"amd_hip_vector_types.h", "device_library_decls.h", "math_fwd.h",
                                         "host_defines.h"}
    for link in siblings:
        link.unlink()
    broken = _gxx("-fsyntax-only", f"-I{include}", f"-I{root / 'include'}", sources[0], cwd=folder)
    assert broken.returncode != 0 and "amd_hip_vector_types.h" in broken.stderr


def _both_paths_unit(root: Path, folder: Path) -> Path:
    """math_fwd.h reached through the overlay (from the fixed header) and by its real path, as the
    real ROCm headers do (amd_device_functions.h includes "math_fwd.h" beside itself)."""
    unit = folder / "c.cpp"
    unit.write_text(f'#include <hip/hip_bf16.h>\n#include "{root / "include" / "hip" / "amd_detail" / "math_fwd.h"}"\n'
                    "int main() { synthetic_native_vec2 v{}; return (int)v.lanes[0]; }\n")
    return unit


@pytest.mark.parametrize("compiler", COMPILERS)
def test_pragma_once_header_reached_by_both_paths_is_read_once(patched, compiler):
    root, include, folder = patched
    unit = _both_paths_unit(root, folder)
    out = _gxx("-fsyntax-only", f"-I{include}", f"-I{root / 'include'}", str(unit), cwd=folder, compiler=compiler)
    assert out.returncode == 0, out.stderr


@pytest.mark.skipif(CLANG is None, reason="no clang++ here (hipcc is clang)")
def test_a_copied_sibling_would_be_read_twice_by_clang(patched):
    """Why the overlay links siblings: clang tells files apart by identity, so even a copy with the
    same bytes and mtime is a second file and a #pragma once header is read twice."""
    root, include, folder = patched
    sibling = include / "hip" / "amd_detail" / "math_fwd.h"
    sibling.unlink()
    shutil.copy2(root / "include" / "hip" / "amd_detail" / "math_fwd.h", sibling)
    out = _gxx("-fsyntax-only", f"-I{include}", f"-I{root / 'include'}", str(_both_paths_unit(root, folder)),
               cwd=folder, compiler="clang++")
    assert out.returncode != 0 and "redefinition" in out.stderr


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_6_0_text_fix_on_a_6_1_header_is_rejected(tmp_path, compiler):
    """Why the fix is chosen by version and checksum: doubling `static inline` is an error for g++
    and a -Wduplicate-decl-specifier warning for clang (an error under -Werror)."""
    root = make_rocm(tmp_path, version="6.1.2", header=FIXTURES / "amd_hip_bf16-6.1.h")
    header = root / HEADER
    header.write_text(header.read_text().replace("__HOST_DEVICE__ float __low2float",
                                                 "__HOST_DEVICE__ static inline float __low2float"))
    (tmp_path / "a.cpp").write_text(UNIT_A)
    out = _gxx("-fsyntax-only", "-Werror", f"-I{root / 'include'}", "a.cpp", cwd=tmp_path, compiler=compiler)
    assert out.returncode != 0 and "duplicate" in out.stderr
