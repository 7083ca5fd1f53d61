"""Pure decisions, no I/O: GVKs and keys, watches.yaml, extra vars, conditions, predicates,
label selectors, ownership and CR annotations. Imports only ``gocompat``."""
