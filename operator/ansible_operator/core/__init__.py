"""Pure decisions, no I/O: GVKs and keys, watches.yaml, extra vars, conditions, predicates,
label selectors, ownership, CR annotations and leader election. Imports only ``gocompat``."""
