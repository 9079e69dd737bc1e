"""llama.cpp's default thread count: one per physical core of the CPUs this process may run
on (its affinity), within a container's CPU quota; read from a sysfs tree and a `cpu.max`
written here, the way Linux lays them out."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento.localmodel.threads import cpu_quota, default_threads, physical_cores, threads_for


def sysfs(root: Path, cores: dict[int, tuple[int, int]]) -> Path:
    """A /sys/devices/system/cpu tree: CPU number -> (package, core)."""
    for cpu, (package, core) in cores.items():
        topology = root / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    return root


# 4 cores with two hardware threads each: CPU n and n+4 share core n (Linux numbers siblings so).
SMT = {cpu: (0, cpu % 4) for cpu in range(8)}
# Two sockets whose cores have the same ids.
TWO_SOCKETS = {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}


def test_one_thread_per_physical_core_not_per_hardware_thread(tmp_path: Path) -> None:
    tree = sysfs(tmp_path / "cpu", SMT)
    choice = default_threads(set(range(8)), tree, tmp_path / "no-cgroup")
    assert choice.threads == 4
    assert choice.why == (
        "one per physical core this process may run on, as llama.cpp's own default (8 CPUs on 4 cores)"
    )


def test_only_the_cores_of_the_cpus_this_process_may_run_on(tmp_path: Path) -> None:
    tree = sysfs(tmp_path / "cpu", SMT)
    assert physical_cores({0, 4}, tree) == 1  # both hardware threads of core 0
    assert physical_cores({0, 1, 4}, tree) == 2
    assert default_threads({1, 5, 2}, tree, tmp_path / "no-cgroup").threads == 2


def test_cores_of_two_sockets_are_told_apart(tmp_path: Path) -> None:
    tree = sysfs(tmp_path / "cpu", TWO_SOCKETS)
    assert physical_cores({0, 1, 2, 3}, tree) == 4


def test_a_quiet_two_core_machine_gets_both_cores(tmp_path: Path) -> None:
    # The case the load average got wrong: no reading of recent work lowers it.
    tree = sysfs(tmp_path / "cpu", {0: (0, 0), 1: (0, 1)})
    choice = default_threads({0, 1}, tree, tmp_path / "no-cgroup")
    assert choice.threads == 2
    assert "(" not in choice.why  # as many CPUs as cores: nothing more to say


def test_without_topology_each_cpu_counts(tmp_path: Path) -> None:
    choice = default_threads({0, 1, 2}, tmp_path / "absent", tmp_path / "no-cgroup")
    assert choice.threads == 3
    assert choice.why.startswith("one per CPU this process may run on")


@pytest.mark.parametrize(
    ("cpu_max", "quota"),
    [("max 100000", None), ("200000 100000", 2), ("150000 100000", 2), ("50000 100000", 1), ("junk", None)],
)
def test_a_cgroup_quota_in_whole_cpus(tmp_path: Path, cpu_max: str, quota: int | None) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(cpu_max + "\n")
    assert cpu_quota(path) == quota


def test_a_container_quota_below_the_cores_limits_the_threads(tmp_path: Path) -> None:
    tree = sysfs(tmp_path / "cpu", SMT)
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    choice = default_threads(set(range(8)), tree, tmp_path / "cpu.max")
    assert choice.threads == 2
    assert choice.why.endswith("within the container's CPU quota of 2")
    (tmp_path / "cpu.max").write_text("800000 100000\n")  # a quota above the cores changes nothing
    assert default_threads(set(range(8)), tree, tmp_path / "cpu.max").threads == 4


def test_the_setting_wins() -> None:
    assert threads_for(3).threads == 3
    assert threads_for(3).why == "provider.local.threads"
    assert threads_for(None) == default_threads()
