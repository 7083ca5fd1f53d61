"""The operator's life: ``operator`` (``prepare`` reads and checks the user's input; ``Operator``
wires the parts into groups; ``main``), ``runnables`` (the groups started in order and stopped
backwards) and ``parts`` (those that are not servers), ``leader`` and ``shards`` (who acts),
``readiness``, ``conversion_webhook``, ``shutdown`` (the graceful drain and the signals).
"""
