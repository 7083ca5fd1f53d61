"""A Python runtime for Operator SDK Ansible operators.

Roles listed in watches.yaml are the reconcile logic: the runtime watches their custom resources,
runs the matching role through ansible-runner and writes the outcome back as status conditions.
"""

__version__ = "0.1.0"
