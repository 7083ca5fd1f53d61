"""What /proc shows of a forked warm-run process: its command line and environment, per run.

`/proc/<pid>/cmdline` and `/proc/<pid>/environ` show the memory where the kernel put the argv and
environment of the last exec, so a process forked from the fork server would show the server's,
whatever it does with sys.argv and os.environ. The runs' processes must show their own: proctree
finds every process of a run by the marker in its environment (to kill them all), and people
read `ps` and /proc. So the fork server is exec-ed with room to spare in both (`ROOM_ARG`, the
`ROOM_ENV` variable), and each forked process writes its own argv and environment over them,
in its own memory (copy-on-write), NUL-padded, as setproctitle does for the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ROOM_ENV = "ANSIBLE_OPERATOR_ENVIRON_ROOM"
ENV_ROOM = 120_000  # bytes; one argument or variable may not exceed 128 KiB (MAX_ARG_STRLEN)
ARG_ROOM = 16_384

# Fields of /proc/self/stat, counted from the one after the command name (state, field 3).
_ARG_START, _ARG_END, _ENV_START, _ENV_END = 48 - 3, 49 - 3, 50 - 3, 51 - 3


def room_arg() -> str:
    """The fork server's last argument: room for a run's command line."""
    return "-" * ARG_ROOM


def room_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The fork server's environment: `environ` with room for a run's environment."""
    return {**environ, ROOM_ENV: "-" * ENV_ROOM}


def show_as(argv: Sequence[str], environ: Mapping[str, str]) -> None:
    """Make this process's /proc cmdline and environ read `argv` and `environ`.

    Raises RuntimeError if the environment does not fit (the command line is cut instead), or if
    this system does not let a process write its own memory through /proc.
    """
    env = b"".join(
        f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0" for k, v in environ.items()
    )
    args = b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv)
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    env_start, env_end = int(fields[_ENV_START]), int(fields[_ENV_END])
    arg_start, arg_end = int(fields[_ARG_START]), int(fields[_ARG_END])
    if len(env) > env_end - env_start:
        raise RuntimeError(
            f"a run's environment ({len(env)} bytes) does not fit in the fork server's "
            f"{env_end - env_start} bytes"
        )
    args = args[: arg_end - arg_start - 1]
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:  # opened here: this process's
            mem.seek(env_start)
            mem.write(env.ljust(env_end - env_start, b"\0"))
            mem.seek(arg_start)
            mem.write(args.ljust(arg_end - arg_start, b"\0"))
    except OSError as err:
        raise RuntimeError(
            f"the warm runner cannot write /proc/self/mem ({err}); use --runner=cold"
        ) from err
