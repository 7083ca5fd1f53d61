"""``ansible-operator run`` refuses bad input before starting: one line, exit code 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def run(args, tmp_path, env_extra=None):
    env = dict(os.environ)
    env["KUBECONFIG"] = str(tmp_path / "kubeconfig")
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "run", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )


def error_lines(result):
    return [
        line
        for line in result.stderr.splitlines()
        if "error" in line.lower() or line.startswith("ansible-operator")
    ]


@pytest.mark.parametrize(
    ("watches", "expected"),
    [
        (
            "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: nowhere\n",
            "entry 1 (x.example.com/v1, Kind=Foo): role: nowhere was not found (looked in ",
        ),
        ("- version: v1\n  group: x.example.com\n  kind: Foo\n", "must specify Role or Playbook"),
        ("[unclosed\n", "watches.yaml"),
        ("- group: x.example.com\n  kind: Foo\n  role: r\n", "version must not be empty"),
    ],
)
def test_a_bad_watches_file_is_one_line_and_exit_1(tmp_path, watches, expected):
    (tmp_path / "watches.yaml").write_text(watches)
    result = run([], tmp_path)
    assert result.returncode == 1
    *before, last = result.stderr.strip().splitlines()
    assert all(json.loads(line)["level"] == "info" for line in before), "log records, no more"
    assert last.startswith("ansible-operator run: Failed to load watches: ")
    assert "watches.yaml" in last and expected in last


def test_a_duplicate_gvk_names_both_entries(tmp_path):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    entry = "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: r\n"
    (tmp_path / "watches.yaml").write_text(entry + entry)
    result = run([], tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "entry 1" in last and "duplicate GVK: x.example.com/v1, Kind=Foo" in last


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--reconcile-period=often"], "reconcile-period"),
        (["--no-such-flag"], "no-such-flag"),
        (["--max-concurrent-reconciles=many"], "max-concurrent-reconciles"),
        (["--metrics-require-rbac"], "--metrics-secure flag is required"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_1(tmp_path, args, expected):
    result = run(args, tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ansible-operator: error:") and expected in lines[0]


def test_missing_credentials_are_one_line(tmp_path):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: r\n"
    )
    result = run([], tmp_path)  # KUBECONFIG points at a file that does not exist
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == f"ansible-operator run: KUBECONFIG={tmp_path / 'kubeconfig'}: no such file"


def test_a_metrics_cert_dir_without_the_pair_is_one_line(tmp_path):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: r\n"
    )
    (tmp_path / "kubeconfig").write_text(  # never contacted: the certificate is checked first
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    (tmp_path / "certs").mkdir()
    result = run(["--metrics-secure", f"--metrics-cert-dir={tmp_path / 'certs'}"], tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert (
        last
        == f"ansible-operator run: --metrics-cert-dir: {tmp_path / 'certs'}/tls.crt does not exist"
    )
    assert "Traceback" not in result.stderr
