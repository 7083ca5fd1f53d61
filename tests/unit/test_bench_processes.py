"""`make bench`'s reading of /proc: the operator's process tree, its memory and its CPU."""

from __future__ import annotations

import os
import subprocess
import sys

from bench import processes


def test_the_tree_holds_the_root_and_its_descendants_and_their_memory_adds_up():
    # The child says its child's pid once that grandchild runs.
    script = (
        "import subprocess; p = subprocess.Popen(['sleep', '30']); "
        "print(p.pid, flush=True); p.wait()"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        me = os.getpid()
        found = processes.tree(me)
        assert found[0] == me and {child.pid, grandchild} <= set(found)
        assert sorted(processes.tree(child.pid)) == sorted([child.pid, grandchild])
        rss_me, pss_me = processes.memory_mib([me])
        rss_all, pss_all = processes.memory_mib(found)
        assert 0 < pss_me <= rss_me and rss_all > rss_me and pss_all > pss_me
    finally:
        for pid in processes.tree(child.pid)[1:]:
            os.kill(pid, 9)
        child.kill()
        child.wait()


def test_cpu_percent_counts_each_process_over_the_interval_and_new_ones_whole():
    ticks = processes.TICKS_PER_S
    before = {1: 10 * ticks, 2: 5 * ticks}
    after = {1: 11 * ticks, 2: 5 * ticks, 3: ticks}  # 3 started in between
    assert processes.cpu_percent(before, after, 20.0) == 10.0


def test_cpu_ticks_of_a_gone_process_are_left_out():
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert processes.cpu_ticks([gone.pid]) == {}
    assert os.getpid() in processes.cpu_ticks([os.getpid()])
