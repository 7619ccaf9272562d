"""verify and bench: the tiny checkpoint (pure Python), and real runs in real torch environments."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli

from resolver.core.inenv_protocol import parse as parse_output
from resolver.verify.checkpoint import (
    TinySpec,
    default_checkpoint,
    tensor_shapes,
    write_tiny_checkpoint,
)


def _project_with(tmp_path: Path, envs: dict[str, Path]) -> Path:
    """A project whose .resolver/envs/<name> point at existing environments (symlinks, nothing copied)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    (tmp_path / ".resolver" / "envs").mkdir(parents=True)
    for name, path in envs.items():
        (tmp_path / ".resolver" / "envs" / name).symlink_to(path, target_is_directory=True)
    return tmp_path


def _safetensors_header(path: Path) -> dict:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + size])


def test_tiny_checkpoint_is_deterministic_and_complete(tmp_path):
    a, b = write_tiny_checkpoint(tmp_path / "a"), write_tiny_checkpoint(tmp_path / "b")
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    header = _safetensors_header(a / "model.safetensors")
    shapes = tensor_shapes(TinySpec())
    assert {k: tuple(v["shape"]) for k, v in header.items() if k != "__metadata__"} == shapes
    end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
    assert end == sum(4 * max(1, __import__("math").prod(s)) for s in shapes.values())
    config = json.loads((a / "config.json").read_text())
    assert (config["model_type"], config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == ("mamba", 64, 2, 256)


def test_default_checkpoint_is_cached_by_content(tmp_path):
    first = default_checkpoint(tmp_path)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert default_checkpoint(tmp_path) == first and (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert default_checkpoint(tmp_path, TinySpec(seed=7)) != first


def test_parse_output_takes_the_last_marker_line():
    assert parse_output("x\nRESOLVER-JSON {\"a\": 1}\nnoise\nRESOLVER-JSON {\"a\": 2}\n") == {"a": 2}
    assert parse_output("no marker") is None


def test_verify_refuses_a_folder_without_a_checkpoint(tmp_path, cpu_project):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli.run("verify", "--model", str(empty), project=cpu_project)
    assert done.returncode == 3
    assert "config.json" in done.stderr and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_verify_passes_in_the_cpu_environment(cpu_project):
    done = cli.run("verify", "--json", project=cpu_project)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["ok"] and doc["versions"]["torch"].startswith("2.13.0")
    assert doc["library"]["name"] == "transformers.MambaForCausalLM" and not doc["library"]["uses_kernels"]
    status = {c["name"]: c["status"] for c in doc["checks"]}
    assert status["gpu"] == "skip" and status["logits:float32"] == "pass" and status["generate:float32"] == "pass"
    logits = doc["results"]["float32"]["logits"]
    assert logits["rel_err"] <= logits["tolerance"] == 1e-3
    assert doc["results"]["float32"]["reference"]["tokens"] == doc["results"]["float32"]["library"]["tokens"]
    assert doc["timings"]["wall_s"] < 120


def test_verify_fails_when_the_checkpoint_does_not_fit_its_config(tmp_path, cpu_project):
    model = write_tiny_checkpoint(tmp_path / "m")
    config = json.loads((model / "config.json").read_text())
    config["num_hidden_layers"] = 3  # the weights hold 2 layers
    (model / "config.json").write_text(json.dumps(config))
    done = cli.run("verify", "--model", str(model), "--json", project=cpu_project)
    assert done.returncode == 1, done.stdout[-2000:]
    doc = json.loads(done.stdout)
    assert not doc["ok"]
    check = next(c for c in doc["checks"] if c["name"] == "checkpoint")
    assert check["status"] == "fail" and "backbone.layers.2.norm.weight" in check["missing"]


@pytest.mark.slow
def test_bench_compare_two_torches(tmp_path, cpu_project, other_torch_env):
    project = _project_with(tmp_path, {"cpu": cpu_project / ".resolver" / "envs" / "cpu", "other": other_torch_env})
    done = cli.run("bench", "--env", "cpu", "--compare", "other", "--prompt-len", "16", "--new-tokens", "8",
                   "--repeat", "3", "--json", project=project)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    torches = [r["torch"] for r in doc["runs"]]
    assert torches[0].startswith("2.13.0") and torches[1].startswith("2.14.1")
    numerics = doc["compare"]["numerics"]
    assert numerics["ok"] and numerics["tokens_equal"] and numerics["rel_err"] <= numerics["tolerance"]
    for run in doc["runs"]:
        lib = run["bench"]["library"]
        assert lib["prefill_tokens_per_s"] > 0 and len(lib["generate_all_ms"]) == 3
        assert lib["decode_tokens_per_s"] is None or lib["decode_tokens_per_s"] > 0  # None: too noisy to tell
    ratio = doc["compare"]["speed_ratio_other_over_env"]
    assert all(value is None or value > 0 for value in ratio.values())  # None: too noisy to mean anything


def test_fatbin_reader_lists_sass_and_ptx_and_survives_garbage():
    from resolver.verify.inenv.fatbin import (
        archs_in_fatbin,
        archs_of_library,
        fatbin_container,
    )

    blob = b"\0" * 13 + fatbin_container([(2, 80), (2, 90)]) + b"junk" + fatbin_container([(1, 90), (2, 120)])
    assert archs_in_fatbin(blob) == ["sm_80", "compute_90", "sm_90", "sm_120"]
    assert archs_in_fatbin(b"\x50\xed\x55\xba" + b"\xff" * 40) == []
    assert archs_of_library(Path(sys.executable).resolve()) == []  # an ELF without .nv_fatbin


def test_arch_support_rules():
    from resolver.verify.inenv.facts import arch_supported, parse_archs, parse_expected_torch

    assert arch_supported("sm_90", ["sm_80", "sm_90"]) is True
    assert arch_supported("sm_90", ["sm_80", "compute_80"]) is True  # PTX JIT to a newer GPU
    assert arch_supported("sm_61", ["sm_75", "sm_80", "compute_80"]) is False
    assert arch_supported("gfx90a", ["gfx942"]) is False and arch_supported("sm_90", []) is None
    assert parse_archs("cu130_torch2.14_cxx11_py311_sm90_h1a2b3c4_0") == ["sm_90"]
    assert parse_expected_torch("2.2.4+cu12torch2.6cxx11abiTRUE") == "2.6"
    assert parse_expected_torch("1.7.0") is None


MAMBA_SSM_CONFIG = {"d_model": 64, "n_layer": 2, "vocab_size": 256, "ssm_cfg": {}, "rms_norm": True,
                    "residual_in_fp32": True, "fused_add_norm": True, "pad_vocab_size_multiple": 8,
                    "tie_embeddings": False}
TO_MAMBA_SSM = """
import sys, torch
from safetensors.torch import load_file
state = {k.replace("backbone.embeddings.", "backbone.embedding."): v for k, v in load_file(sys.argv[1]).items()}
torch.save(state, sys.argv[2])
"""


def test_verify_reads_a_mamba_ssm_checkpoint(tmp_path, cpu_project):
    """mamba_ssm's own layout (d_model/ssm_cfg config, pytorch_model.bin, `embedding` key) gives the same answer."""
    hf = write_tiny_checkpoint(tmp_path / "hf")
    ms = tmp_path / "ms"
    ms.mkdir()
    (ms / "config.json").write_text(json.dumps(MAMBA_SSM_CONFIG))
    python = cpu_project / ".resolver" / "envs" / "cpu" / "bin" / "python"
    subprocess.run([str(python), "-c", TO_MAMBA_SSM, str(hf / "model.safetensors"), str(ms / "pytorch_model.bin")], check=True)
    doc = json.loads(cli.run("verify", "--model", str(ms), "--json", project=cpu_project).stdout)
    assert doc["ok"], [c for c in doc["checks"] if c["status"] == "fail"]
    assert doc["model"]["files"] == ["pytorch_model.bin"] and doc["model"]["spec"]["d_model"] == 64
    result = doc["results"]["float32"]
    assert result["library"]["tokens"] == result["reference"]["tokens"] and result["logits"]["rel_err"] < 1e-5


def test_verify_and_doctor_in_an_environment_without_torch(tmp_path):
    """A venv without torch: verify exits 7 with one sentence; doctor says torch does not import."""
    env = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    project = _project_with(tmp_path / "p", {"bare": env})
    done = cli.run("verify", project=project)
    assert done.returncode == 7, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "install --env bare --force" in done.stderr
    doc = json.loads(cli.run("doctor", "--json", project=project).stdout)
    torch = next(f for f in doc["findings"] if f["name"] == "torch")
    assert torch["status"] == "fail" and "torch" in torch["detail"] and "--force" in torch["fix"]
