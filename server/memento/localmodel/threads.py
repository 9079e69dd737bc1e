"""How many threads llama.cpp gets when `provider.local.threads` is unset, and why.

llama.cpp's own default: the physical cores, one thread each (a second thread on a core's
other hardware thread only waits for the first: they share the core's vector units). Here,
the cores of the CPUs this process may run on (its affinity), no more than a container's CPU
quota allows. Not the CPUs less the load average: that average lags by a minute and counts
work that has already stopped, so a quiet 2-core machine still reading 1.25 from a build got
one thread, and a task that took 61 s with two ran for five minutes."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

SYSFS_CPUS = Path("/sys/devices/system/cpu")
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    why: str


def allowed_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity; every CPU where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def physical_cores(cpus: set[int], sysfs: Path = SYSFS_CPUS) -> int | None:
    """The distinct cores (package and core id) the CPUs `cpus` sit on, or None when the
    system does not say (no sysfs topology)."""
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return None
        cores.add((package, core))
    return len(cores) or None


def cpu_quota(path: Path = CGROUP_CPU_MAX) -> int | None:
    """The whole CPUs a cgroup (v2) quota lets this process use (`cpu.max`, rounded up), or
    None without a quota."""
    try:
        quota, _, period = path.read_text().strip().partition(" ")
    except OSError:
        return None
    if quota == "max" or not period:
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def default_threads(
    cpus: set[int] | None = None, sysfs: Path = SYSFS_CPUS, cgroup: Path = CGROUP_CPU_MAX
) -> ThreadChoice:
    """The thread count for llama.cpp when none is configured, with the reason in words."""
    allowed = allowed_cpus() if cpus is None else cpus
    cores = physical_cores(allowed, sysfs)
    if cores is None:
        count = len(allowed)
        why = "one per CPU this process may run on (the system does not say which share a core)"
    else:
        count, why = cores, "one per physical core this process may run on, as llama.cpp's own default"
        if cores != len(allowed):
            why += f" ({len(allowed)} CPUs on {cores} cores)"
    quota = cpu_quota(cgroup)
    if quota is not None and quota < count:
        count, why = quota, f"{why}, within the container's CPU quota of {quota}"
    return ThreadChoice(max(1, count), why)


def threads_for(configured: int | None) -> ThreadChoice:
    """The configured count, else the default."""
    if configured:
        return ThreadChoice(configured, "provider.local.threads")
    return default_threads()
