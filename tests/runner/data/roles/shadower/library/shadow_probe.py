#!/usr/bin/python
"""Reports which `ansible.module_utils.urls` it imported: the role's shadows ansible-core's."""

from ansible.module_utils import urls
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, urls_from=getattr(urls, "SHADOWED_BY", "ansible-core"))


if __name__ == "__main__":
    main()
