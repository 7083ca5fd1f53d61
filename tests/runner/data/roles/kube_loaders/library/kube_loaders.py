#!/usr/bin/python
"""Calls one of the Kubernetes client's configuration loaders as a custom module would, and
reports where the client would send requests (server and bearer token), or the loader's error."""

import os

from ansible.module_utils.basic import AnsibleModule
from kubernetes import client, config

LOADERS = {
    "load_config": config.load_config,
    "load_kube_config": config.load_kube_config,
    "load_incluster_config": config.load_incluster_config,
}


def main():
    module = AnsibleModule(
        argument_spec={"loader": {"choices": sorted(LOADERS), "required": True}},
        supports_check_mode=True,
    )
    where = dict(
        in_cluster_env=sorted(k for k in os.environ if k.startswith("KUBERNETES_SERVICE_")),
        host=None,
        authorization=None,
        error=None,
    )
    try:
        LOADERS[module.params["loader"]]()
    except config.ConfigException as err:
        where["error"] = str(err)
    else:
        configuration = client.Configuration.get_default_copy()
        where["host"] = configuration.host
        where["authorization"] = configuration.get_api_key_with_prefix(
            "BearerToken", alias="authorization"
        )
    module.exit_json(changed=False, where=where)


if __name__ == "__main__":
    main()
