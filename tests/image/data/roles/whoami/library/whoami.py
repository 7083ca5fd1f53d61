#!/usr/bin/python
"""Calls one of the Kubernetes client's configuration loaders as a custom module would, then asks
the API server who it is (a SelfSubjectReview); reports the server the client talked to, whose
bearer token it sent (the run's kubeconfig's or the mounted ServiceAccount's) and the username
the API server saw, or the loader's error."""

import os

import yaml
from ansible.module_utils.basic import AnsibleModule
from kubernetes import client, config

LOADERS = {
    "load_config": config.load_config,
    "load_kube_config": config.load_kube_config,
    "load_incluster_config": config.load_incluster_config,
}
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _tokens():
    """The bearer tokens this module could send, by whose they are."""
    tokens = {}
    with open(SERVICE_ACCOUNT_TOKEN) as handle:
        tokens[handle.read().strip()] = "service account"
    with open(os.environ["KUBECONFIG"]) as handle:
        for user in yaml.safe_load(handle)["users"]:
            tokens[user["user"]["token"]] = "run"
    return tokens


def main():
    module = AnsibleModule(
        argument_spec={"loader": {"choices": sorted(LOADERS), "required": True}},
        supports_check_mode=True,
    )
    try:
        LOADERS[module.params["loader"]]()
    except config.ConfigException as err:
        module.exit_json(changed=False, seen={"error": str(err)})
    configuration = client.Configuration.get_default_copy()
    bearer = configuration.get_api_key_with_prefix("BearerToken", alias="authorization") or ""
    review = client.AuthenticationV1Api().create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    seen = {
        "server": configuration.host,
        "token": _tokens().get(bearer.partition(" ")[2], "other"),  # after "Bearer "/"bearer "
        "username": review.status.user_info.username,
    }
    module.exit_json(changed=False, seen=seen)


if __name__ == "__main__":
    main()
