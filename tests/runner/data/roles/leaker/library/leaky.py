#!/usr/bin/python
"""Reports what earlier module runs may have left behind, then leaves the same things behind."""

import os
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.leak_cache import SEEN
from kubernetes.config import kube_config


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    seen = dict(
        cache_size=len(SEEN) + 1,
        cwd=os.getcwd(),
        leaked_env=os.environ.get("LEAKED_BY_MODULE", ""),
        task_env=os.environ.get("SET_BY_TASK_ENVIRONMENT", ""),
        in_process=os.environ.get("ANSIBLE_OPERATOR_WARM_MODULE") == "1",
        controller_loaded="ansible.executor.task_executor" in sys.modules,
        # load_kube_config()'s default: KUBECONFIG as this module's environment has it.
        default_kubeconfig=kube_config.KUBE_CONFIG_DEFAULT_LOCATION,
    )
    SEEN.append("again")
    os.environ["LEAKED_BY_MODULE"] = "yes"
    os.chdir("/")
    module.exit_json(changed=False, **seen)


if __name__ == "__main__":
    main()
