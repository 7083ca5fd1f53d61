"""A filter (runs in Ansible's own processes) that leaves a global, a variable and a cwd behind."""

import os

CALLS = []


def leak_in_controller(value):
    seen = {
        "calls": len(CALLS) + 1,
        "leaked_env": os.environ.get("LEAKED_BY_FILTER", ""),
        "cwd_is_root": os.getcwd() == "/",
    }
    CALLS.append(value)
    os.environ["LEAKED_BY_FILTER"] = "yes"
    os.chdir("/")
    return seen


class FilterModule:
    def filters(self):
        return {"leak_in_controller": leak_in_controller}
