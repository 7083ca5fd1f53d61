"""Development commands around the runtime: the operator launcher, ``dev run`` and ``dev molecule``.

They sit above ``devcluster`` (they start the local cluster) and never load in the operator.
"""
