"""Sample CRs pruned of fields their CRD no longer has, everything else kept byte for byte."""

from __future__ import annotations

import pytest

from ansible_operator.scaffold.samples import SampleError, prune

SCHEMA = {
    "type": "object",
    "properties": {
        "size": {"type": "integer"},
        "labels": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "backend": {"type": "object", "properties": {"host": {"type": "string"}}},
        "ports": {
            "type": "array",
            "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
        },
    },
}
SCHEMAS = {("cache.example.com/v1", "Memcached"): SCHEMA}

SAMPLE = """\
# A sample, with comments that stay.
apiVersion: cache.example.com/v1
kind: Memcached
metadata:
  name: sample
spec:
  size: 3  # three pods
  # The old option, and its comment, go.
  old_thing:
    nested: [1, 2]
    more: true
  labels:
    anything: goes
  backend:
    host: cache
    gone: |
      a block
      scalar
  ports:
    - port: 80
      stale: 1
---
apiVersion: other.example.com/v1
kind: Memcached
metadata:
  name: not-ours
spec:
  unknown: kept
"""

PRUNED = """\
# A sample, with comments that stay.
apiVersion: cache.example.com/v1
kind: Memcached
metadata:
  name: sample
spec:
  size: 3  # three pods
  labels:
    anything: goes
  backend:
    host: cache
  ports:
    - port: 80
---
apiVersion: other.example.com/v1
kind: Memcached
metadata:
  name: not-ours
spec:
  unknown: kept
"""


def test_stale_fields_are_cut_and_the_rest_kept_as_written():
    text, removed = prune(SAMPLE, SCHEMAS, where="config/samples/s.yaml")
    assert text == PRUNED
    assert removed == [
        "Memcached/sample: spec.old_thing",
        "Memcached/sample: spec.backend.gone",
        "Memcached/sample: spec.ports[0].stale",
    ]


def test_an_up_to_date_sample_is_unchanged():
    assert prune(PRUNED, SCHEMAS, where="s") == (PRUNED, [])


@pytest.mark.parametrize(
    "sample",
    [
        "apiVersion: cache.example.com/v1\nkind: Memcached\nmetadata: {name: s}\n"
        "spec: {size: 1, old: 2}\n",
        "apiVersion: cache.example.com/v1\nkind: Memcached\nmetadata: {name: s}\n"
        "spec:\n  ports:\n    - stale: 1\n      port: 2\n",
    ],
)
def test_a_stale_field_sharing_its_line_is_left_to_the_user_in_one_line(sample):
    with pytest.raises(SampleError) as caught:
        prune(sample, SCHEMAS, where="config/samples/s.yaml")
    message = str(caught.value)
    assert message.startswith("config/samples/s.yaml: Memcached/s: spec.")
    assert "remove it by hand" in message


def test_unreadable_yaml_is_one_line():
    with pytest.raises(SampleError, match=r"^config/samples/s.yaml: cannot read: "):
        prune("a: [\n", SCHEMAS, where="config/samples/s.yaml")
