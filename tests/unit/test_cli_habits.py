"""operator-sdk's habits: `create api`, `init --plugins`, `--version`, `completion`, and a bad
command line said in one line with the closest valid word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ansible_operator import __version__, cli
from ansible_operator.core import ansible_cores
from ansible_operator.scaffold import source

FRESH_WATCHES = "---\n# +kubebuilder:scaffold:watch\n"
API = ["--group", "cache", "--domain", "example.com", "--version", "v1", "--kind", "Memcached"]


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_create_api_is_new_api(tmp_path, monkeypatch, capsys):
    made = {}
    for name, command in (("new", ["new-api"]), ("create", ["create", "api"])):
        project = tmp_path / name
        project.mkdir()
        (project / "watches.yaml").write_text(FRESH_WATCHES)
        monkeypatch.chdir(project)
        assert cli.main([*command, *API, "--generate-playbook"]) == 0
        made[name] = tree(project)
    assert made["create"] == made["new"]
    assert "playbooks/memcached.yml" in made["create"]


@pytest.mark.parametrize("plugins", ["ansible", "ansible.sdk.operatorframework.io/v1"])
def test_init_takes_the_ansible_plugin(tmp_path, monkeypatch, plugins):
    monkeypatch.chdir(tmp_path)
    argv = ["init", f"--plugins={plugins}", "--domain", "example.com", "--project-name", "op"]
    assert cli.main(argv) == 0
    assert (tmp_path / "watches.yaml").is_file()


def test_init_refuses_another_plugin_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", "--plugins=go/v4", "--domain", "example.com"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "ansible-operator init: --plugins=go/v4: this tool makes Ansible operators only "
        "(--plugins=ansible or ansible.sdk.operatorframework.io/v1); for another kind, use "
        "operator-sdk\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["crate", "api"], "ansible-operator: unknown command 'crate' (did you mean create?)"),
        (["new-api", "--grup", "cache"],
         "ansible-operator new-api: unknown flag --grup (did you mean --group?)"),
        (["create", "api", "--kind=X", "--verison=v1"],
         "ansible-operator create api: unknown flag --verison (did you mean --version?)"),
        (["create", "apis"], "ansible-operator create: unknown command 'apis' (did you mean api?)"),
        (["completion", "bsh"],
         "ansible-operator completion: unknown value for shell 'bsh' (did you mean bash?)"),
        (["generate", "crds", "extra"],
         "ansible-operator generate crds: unexpected argument 'extra'"),
        (["new-api"], "ansible-operator new-api: the following arguments are required: --group, "
         "--version, --kind"),
    ],
)  # fmt: skip
def test_a_bad_command_line_is_one_line_exit_1(capsys, argv, line):
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    prog = line.split(":", 1)[0]
    assert err == f"{line} (see {prog} --help)\n"


@pytest.mark.ansible_core
def test_version_flag_is_the_version_command(capsys):
    assert cli.main(["version"]) == 0
    command = capsys.readouterr().out
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == command
    assert command.startswith('ansible-operator version: "v')


def git(directory: Path, *args: str) -> str:
    argv = ["git", "-C", str(directory), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_is_the_checkout_s_else_the_one_pip_recorded(tmp_path):
    checkout = tmp_path / "src"
    (checkout / "operator/ansible_operator").mkdir(parents=True)
    assert source.commit({}, checkout) == "unknown"  # a wheel from an index: none recorded
    git(checkout, "init", "-q")
    (checkout / "x.py").write_text("")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "x")
    head = git(checkout, "rev-parse", "--short=12", "HEAD")
    assert source.commit({}, checkout) == head
    (checkout / "x.py").write_text("changed")
    assert source.commit({}, checkout) == f"{head}-dirty"
    # installed by pip from a git URL, or built from a source directory
    vcs = {"url": "https://example.com/r.git", "vcs_info": {"vcs": "git", "commit_id": "a" * 40}}
    assert source.commit(vcs, tmp_path / "site-packages") == "a" * 12
    built = {"url": checkout.as_uri(), "dir_info": {}}
    assert source.commit(built, tmp_path / "site-packages") == f"{head}-dirty"


@pytest.mark.ansible_core
def test_version_shows_this_checkout_s_commit(capsys):
    assert cli.main(["version"]) == 0
    head = git(Path(cli.__file__).parents[2], "rev-parse", "--short=12", "HEAD")
    assert f'commit: "{head}' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("recorded", "requirement"),
    [
        ({}, "ansible-operator-py[molecule]==0.1.0"),
        ({"url": "file:///src/ansible-operator", "dir_info": {}},
         "ansible-operator-py[molecule] @ file:///src/ansible-operator"),
        ({"url": "file:///w/ansible_operator_py-0.1.0-py3-none-any.whl", "archive_info": {}},
         "ansible-operator-py[molecule] @ file:///w/ansible_operator_py-0.1.0-py3-none-any.whl"),
        ({"url": "https://git.example.com/op.git",
          "vcs_info": {"vcs": "git", "commit_id": "abc", "requested_revision": "main"}},
         "ansible-operator-py[molecule] @ git+https://git.example.com/op.git@abc"),
    ],
)  # fmt: skip
def test_the_requirement_that_installs_this_runtime_again(recorded, requirement):
    assert source.requirement(recorded, "0.1.0") == requirement


def test_init_s_readme_installs_the_runtime_it_was_made_with(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", "--domain", "example.com", "--project-name", "op"]) == 0
    readme = (tmp_path / "README.md").read_text()
    wanted = source.requirement(source.direct_url(), __version__)
    assert f"\npip install '{wanted}' '{ansible_cores.NEWEST.package}'\n" in readme
    assert "@ file://" in wanted or "==" in wanted


def complete(script: str, line: str) -> list[str]:
    """What bash offers at the end of `line` with the completion script loaded."""
    words = line.split(" ")
    program = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_ansible_operator; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("ansible-operator cr", ["create"]),
        ("ansible-operator create ", ["api"]),
        ("ansible-operator create api --gr", ["--group"]),
        ("ansible-operator new-api --group cache --ver", ["--version"]),
        ("ansible-operator dev-image b", ["build"]),
        ("ansible-operator generate ", ["crds", "kustomize", "bundle", "helm-chart"]),
        ("ansible-operator run --kubec", ["--kubeconfig"]),
        ("ansible-operator run --startup", ["--startup-timeout"]),
        ("ansible-operator init --plu", ["--plugins"]),
        ("ansible-operator --ver", ["--version"]),
    ],
)
def test_bash_completion(capsys, line, offered):
    assert cli.main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert complete(script, line) == offered


def test_zsh_completion_is_the_bash_one_through_bashcompinit(capsys):
    assert cli.main(["completion", "bash"]) == 0
    bash = capsys.readouterr().out
    assert cli.main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out.splitlines(keepends=True)
    assert zsh[1] == "autoload -U +X bashcompinit && bashcompinit\n"
    assert "".join(zsh[2:]).split("\n", 1)[1] == bash.split("\n", 1)[1]


def test_a_reader_that_goes_away_is_no_traceback():
    """`ansible-operator ... | head`: the write into the closed pipe ends the command quietly."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ansible_operator.cli", "completion", "bash"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes
    stderr = proc.stderr.read().decode()
    assert (proc.wait(timeout=60), stderr) == (1, "")
