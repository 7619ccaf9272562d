"""A one-node Slurm cluster for a test: slurmctld and slurmd of Debian's ``slurm-wlm`` on 127.0.0.1, with their
own configuration, ports, state and logs under a temporary folder (nothing of the machine's own Slurm is read
or touched). Jobs run as the user running the tests, in the environment ``sbatch`` is given.

``start(folder)`` returns a :class:`Cluster` once the node is idle, or raises :class:`Unavailable` with the
reason (no Slurm installed, a daemon that does not come up), which the caller turns into a skip.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "sinfo")


class Unavailable(Exception):
    """Slurm cannot run a cluster here; the message says why."""


@dataclass
class Cluster:
    folder: Path
    conf: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What a client (sbatch, squeue) needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def client(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})

    def wait_for(self, jobs: list[str], timeout: float) -> None:
        """Until none of ``jobs`` is pending or running (their state stays queryable: MinJobAge is an hour)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queued = self.client("squeue", "-h", "-o", "%i %T", "-j", ",".join(jobs))
            if queued.returncode == 0 and not queued.stdout.strip():
                return
            time.sleep(2)
        raise TimeoutError(f"jobs {jobs} still queued after {timeout:.0f} s: {self.client('squeue').stdout}")

    def state(self, job: str) -> list[str]:
        """The JobState of each job (each array task) of ``job``."""
        shown = self.client("scontrol", "-o", "show", "job", job)
        return [part.split("=", 1)[1] for line in shown.stdout.splitlines() for part in line.split()
                if part.startswith("JobState=")]

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.folder.glob("*.log")))

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    absent = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None
              and not Path(f"/usr/sbin/{name}").exists()]
    if absent:
        return (f"Slurm is not installed ({', '.join(absent)} missing): `apt-get install slurm-wlm` brings a "
                "one-node cluster")
    return None


def start(folder: Path, cpus: int = 2, memory_mib: int = 4096, timeout: float = 60) -> Cluster:
    reason = missing()
    if reason:
        raise Unavailable(reason)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state").mkdir(exist_ok=True)
    (folder / "spool").mkdir(exist_ok=True)
    user = getpass.getuser()
    node = socket.gethostname().split(".")[0]
    ctld_port, node_port = _free_port(), _free_port()
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        f"ClusterName=test{os.getpid()}",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={node_port}",
        f"SlurmUser={user}",
        f"SlurmdUser={user}",
        "AuthType=auth/none",
        "CredType=cred/none",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}",
        f"SlurmdLogFile={folder / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/builtin",
        "ReturnToService=2",
        "MinJobAge=3600",
        "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mib} State=UNKNOWN",
        f"PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        ""]))
    cluster = Cluster(folder, conf)
    env = {**os.environ, **cluster.env}
    for daemon, extra in (("slurmctld", ["-i"]), ("slurmd", ["-N", node])):
        binary = shutil.which(daemon) or f"/usr/sbin/{daemon}"
        with open(folder / f"{daemon}.out", "wb") as output:
            cluster.processes.append(subprocess.Popen([binary, "-D", "-f", str(conf), *extra], env=env,
                                                      stdout=output, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in cluster.processes):
            break
        shown = cluster.client("sinfo", "-h", "-o", "%T", timeout=10)
        if shown.returncode == 0 and shown.stdout.strip() == "idle":
            return cluster
        time.sleep(1)
    output = "\n".join((folder / f"{d}.out").read_text(errors="replace")[-1000:] for d in DAEMONS)
    cluster.stop()
    raise Unavailable(f"a one-node Slurm cluster did not come up in {timeout:.0f} s: {output.strip()[-600:] or cluster.logs()[-600:]}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
