"""The role's own `ansible.module_utils.urls`: in a module, it wins over ansible-core's."""

SHADOWED_BY = "the role"
