#!/usr/bin/python
"""Warns and deprecates, as a module does: both must reach this module's own result."""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.warn("warned by the module")
    module.deprecate("deprecated by the module", version="9.0.0")
    module.exit_json(changed=False)


if __name__ == "__main__":
    main()
