"""Pure decisions, no I/O: GVKs and keys, watches.yaml, extra vars, conditions, predicates,
label selectors, image references, ownership, cross-kind watches (related resources), CR
annotations, shards, leader election, conversion between a kind's versions and what a planned
run would change. Imports only ``gocompat``.

Other layers use the names below. ``annotations``, ``argspec``, ``changes``, ``conditions``,
``conversion``, ``loops``, ``objects``, ``plan``, ``predicates``, ``reserved_vars``,
``timeline_layout`` and ``triggers`` are namespaces (``conditions.mark_running``), their names
being read best with the module's.
"""

from ansible_operator.core import (
    annotations,
    ansible_cores,
    argspec,
    changes,
    conditions,
    conversion,
    kstatus,
    loops,
    objects,
    plan,
    predicates,
    reserved_vars,
    timeline_layout,
    triggers,
)
from ansible_operator.core.annotations import (
    HOLD_ANNOTATION,
    MAX_VERBOSITY,
    VERBOSITY_ANNOTATION,
    hold,
    log_verbosity,
    max_runner_artifacts,
    reconcile_period,
    verbosity,
)
from ansible_operator.core.backoff import Backoff, ItemBackoff, exponential_delay
from ansible_operator.core.conversion import (
    KindConversion,
    convert,
    to_camel,
    version_priority,
    watched_versions,
)
from ansible_operator.core.extravars import (
    ReservedVariableError,
    SpecError,
    build_extra_vars,
    check_spec,
    extravars_document,
    object_var_name,
)
from ansible_operator.core.images import split_image
from ansible_operator.core.lease import JITTER_FACTOR, Candidate, LeaseRecord, Timings
from ansible_operator.core.limits import EVENT_NOTE_BYTES, cap
from ansible_operator.core.ownership import (
    Key,
    Mode,
    Owner,
    fingerprint,
    has_reference,
    injection_mode,
    is_owner_itself,
    owned_by_annotation,
    owned_by_reference,
    owner_keys,
)
from ansible_operator.core.plan import (
    PLAN_ANSIBLE_ARGS,
    CRPlan,
    TaskChange,
    Write,
    WriteLog,
    cr_plan,
)
from ansible_operator.core.related import CRIndex, Seen, related_event
from ansible_operator.core.selectors import LabelSelector
from ansible_operator.core.shards import DEFAULT_SHARDS, MAX_SHARDS, ShardSpace, balance
from ansible_operator.core.watches import (
    GVK,
    Finalizer,
    Locator,
    RelatedResource,
    RoleSearch,
    Watch,
    WatchesError,
)
from ansible_operator.core.watches_parser import parse_watches

__all__ = [
    "DEFAULT_SHARDS",
    "EVENT_NOTE_BYTES",
    "GVK",
    "HOLD_ANNOTATION",
    "JITTER_FACTOR",
    "MAX_SHARDS",
    "MAX_VERBOSITY",
    "PLAN_ANSIBLE_ARGS",
    "VERBOSITY_ANNOTATION",
    "Backoff",
    "CRIndex",
    "CRPlan",
    "Candidate",
    "Finalizer",
    "ItemBackoff",
    "Key",
    "KindConversion",
    "LabelSelector",
    "LeaseRecord",
    "Locator",
    "Mode",
    "Owner",
    "RelatedResource",
    "ReservedVariableError",
    "RoleSearch",
    "Seen",
    "ShardSpace",
    "SpecError",
    "TaskChange",
    "Timings",
    "Watch",
    "WatchesError",
    "Write",
    "WriteLog",
    "annotations",
    "ansible_cores",
    "argspec",
    "balance",
    "build_extra_vars",
    "cap",
    "changes",
    "check_spec",
    "conditions",
    "conversion",
    "convert",
    "cr_plan",
    "exponential_delay",
    "extravars_document",
    "fingerprint",
    "has_reference",
    "hold",
    "injection_mode",
    "is_owner_itself",
    "kstatus",
    "log_verbosity",
    "loops",
    "max_runner_artifacts",
    "object_var_name",
    "objects",
    "owned_by_annotation",
    "owned_by_reference",
    "owner_keys",
    "parse_watches",
    "plan",
    "predicates",
    "reconcile_period",
    "related_event",
    "reserved_vars",
    "split_image",
    "timeline_layout",
    "to_camel",
    "triggers",
    "verbosity",
    "version_priority",
    "watched_versions",
]
