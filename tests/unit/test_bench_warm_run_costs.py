"""bench/warm_run_costs.py: the per-process exit reports and the table made of them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from bench import warm_run_costs

CHILDREN = textwrap.dedent(
    """
    import multiprocessing, os, sys

    def child(setup):
        pid = os.fork()
        if pid == 0:
            setup()
            pages = bytearray(300 * 4096)  # new pages, each first touched here
            for offset in range(0, len(pages), 4096):
                pages[offset] = 1
            os._exit(0)
        os.waitpid(pid, 0)

    class WorkerProcess(multiprocessing.get_context("fork").Process):  # Ansible's name
        def run(self):
            pass

    child(lambda: None)
    child(lambda: os.environ.__setitem__("ANSIBLE_OPERATOR_WARM_MODULE", "1"))
    child(lambda: setattr(sys, "argv", ["/venv/bin/ansible-playbook", "site.yml"]))
    worker = WorkerProcess()
    worker.start()
    worker.join()
    """
)


def run_children(tmp_path, report_to):
    env = {**os.environ, "PYTHONPATH": str(warm_run_costs.REPORTER)}
    env.pop("WARM_RUN_COSTS_DIR", None)
    if report_to is not None:
        env["WARM_RUN_COSTS_DIR"] = str(report_to)
    subprocess.run([sys.executable, "-c", CHILDREN], env=env, check=True, cwd=tmp_path)


def test_each_forked_process_reports_its_cpu_faults_and_kind_when_it_ends(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    run_children(tmp_path, reports)
    processes = warm_run_costs.read_reports(reports)
    assert sorted(processes) == ["Ansible worker", "ansible-playbook", "module fork", "other"]
    for kind in ("ansible-playbook", "module fork", "other"):
        [(cpu, faults)] = processes[kind]
        assert cpu >= 0
        assert faults >= 300  # its own new pages at least: counted from its fork, not before
    assert len(processes["Ansible worker"]) == 1


def test_without_a_directory_nothing_is_reported_and_exits_are_left_alone(tmp_path):
    run_children(tmp_path, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_table_counts_processes_per_run_and_sums_their_forks_and_faults():
    processes = {
        "ansible-playbook": [(0.100, 17000), (0.120, 17000)],
        "Ansible worker": [(0.010, 3000)] * 14,
        "module fork": [(0.020, 4000), (0.030, 4000)] * 4,
    }
    lines, forks, faults = warm_run_costs.table(processes, runs=2)
    assert forks == 1 + 7 + 4
    assert faults == 17000 + 7 * 3000 + 4 * 4000
    playbook = next(line for line in lines if line.startswith("ansible-playbook"))
    assert playbook.split()[1:] == ["1.0", "110.0", "110.0", "17000", "17000"]
    module = next(line for line in lines if line.startswith("module fork"))
    assert module.split()[2:] == ["4.0", "25.0", "100.0", "4000", "16000"]
    assert not any(line.startswith("ansible-runner") for line in lines)  # none reported
    assert lines[-1] == "all of a run's processes: 280 ms of CPU"  # 110 + 70 + 100
