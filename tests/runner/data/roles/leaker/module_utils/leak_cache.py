"""A module-level cache, as module utilities often keep: it must start empty in every module run."""

SEEN: list[str] = []
