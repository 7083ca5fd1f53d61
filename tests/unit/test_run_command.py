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


UNREACHABLE_KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
    "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
    "users: [{name: u, user: {token: t}}]\n"
    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
)


def test_a_refused_start_is_its_one_line_with_nothing_before(tmp_path):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: r\n"
    )
    result = run([], tmp_path)  # KUBECONFIG names no file
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"ansible-operator run: KUBECONFIG={tmp_path / 'kubeconfig'}: no such file"
    ]


def test_an_unreachable_api_server_is_one_warning_per_try_then_startup_timeout(tmp_path):
    """--kubeconfig wins over KUBECONFIG (which names no file here); each try is one warning
    with the URL and the reason, no stack; --startup-timeout ends the wait with one line."""
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: r\n"
    )
    (tmp_path / "given").write_text(UNREACHABLE_KUBECONFIG)
    ports = ["--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"]
    result = run(
        [f"--kubeconfig={tmp_path / 'given'}", "--startup-timeout=3s", "--proxy-port=0", *ports],
        tmp_path,
        {"ANSIBLE_OPERATOR_USER_METRICS_ADDRESS": "127.0.0.1:0"},
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert lines[-1] == (
        "ansible-operator run: the API server https://127.0.0.1:1 did not answer within "
        "--startup-timeout=3s: Connection refused"
    )
    records = [json.loads(line) for line in lines[:-1]]
    waits = [r for r in records if r["msg"] == "API server not reachable, waiting"]
    assert len(waits) >= 2  # after 0, 1 and 3 s
    for record in waits:
        assert record["level"] == "warning"
        assert record["url"] == "https://127.0.0.1:1"
        assert record["reason"] == "Connection refused"
        assert "stacktrace" not in record
    assert all(r["level"] in ("info", "warning") for r in records), result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_flag_names_the_closest(tmp_path):
    result = run(["--kubeconfg=x"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "ansible-operator: error: unknown flag: --kubeconfg (did you mean --kubeconfig?)"
    )


def test_the_help_says_what_the_flags_do(tmp_path):
    """The texts that were untrue: the leader lock is a Lease; --enable-http2 is refused."""
    result = run(["--help"], tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Name of the configmap" not in text and "election configmap" not in text
    assert "Name of the Lease that holds the leader lock" in text
    assert "--enable-http2 BOOL Refused when true" in text
    assert "--startup-timeout VALUE How long to wait at start for the API server" in text
    assert "0 waits as long as it takes" in text
    assert "--kubeconfig VALUE Path to a kubeconfig" in text
    refused = run(["--enable-http2"], tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "ansible-operator: error: --enable-http2 is not supported: the metrics and probe "
        "endpoints speak HTTP/1.1 only"
    )
