"""The run records: each run's record as it goes and the store of them on disk beside the
runner's artifacts (``history``: ``RunRecord``, ``RunHistory``), who may read which
(``access``: a caller's RBAC on the CRs, asked of the API server through ``kube.reviews``), the
runs API on the metrics endpoint (``api``) and the runs page (``page``).

A layer of its own below the runtime, which records every run here
(``runtime.observe.run_observers``) and serves the API: ``ansible-operator runs ui`` serves the
page from every replica's records without loading the operator.
"""

from ansible_operator.runs import access, api, page
from ansible_operator.runs.history import RunHistory, RunRecord

__all__ = ["RunHistory", "RunRecord", "access", "api", "page"]
