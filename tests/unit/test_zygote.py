"""The pure parts of zygote.py: the kind of a warm run (runs that differ only in what differs by
run share a zygote; anything that can change a setting makes another kind), and a check that
fails taken as "does not fit"."""

from __future__ import annotations

from ansible_operator.runner import proctree
from ansible_operator.runner.warm.zygote import routing_key

ARGV = [
    "/venv/bin/ansible-runner",
    "run",
    "/tmp/runner/g/v1/K/ns/a",
    "--rotate-artifacts",
    "20",
    "--role",
    "memcached",
    "--roles-path",
    "/opt/roles/",
    "--hosts",
    "localhost",
    "-i",
    "111",
]
ENV = {"HOME": "/root", "PATH": "/usr/bin", "ANSIBLE_NOCOLOR": "1", "KUBECONFIG": "/k/a"}


def test_the_private_data_dir_run_id_and_per_run_variables_do_not_make_another_kind():
    other = [*ARGV]
    other[2] = "/tmp/runner/g/v1/K/ns/b"
    other[-1] = "222"
    env = {**ENV, "KUBECONFIG": "/k/b", proctree.MARKER_ENV: "222.x", "RUNNER_TEST_TAG": "t"}
    assert routing_key(other, env, "/work") == routing_key(ARGV, ENV, "/work")


def test_settings_variables_role_and_directory_make_another_kind():
    key = routing_key(ARGV, ENV, "/work")
    other_role = [*ARGV]
    other_role[6] = "nginx"
    assert routing_key(other_role, ENV, "/work") != key
    assert routing_key(ARGV, {**ENV, "ANSIBLE_ROLES_PATH": "/x"}, "/work") != key
    assert routing_key(ARGV, {**ENV, "LC_ALL": "C.UTF-8"}, "/work") != key
    assert routing_key(ARGV, {**ENV, "HOME": "/home/op"}, "/work") != key
    assert routing_key(ARGV, ENV, "/elsewhere") != key
    assert routing_key([*ARGV, "-vv"], ENV, "/work") != key
