"""Container image references."""

from __future__ import annotations


def split_image(image: str) -> tuple[str, str]:
    """``registry:5000/name:tag`` → (``registry:5000/name``, ``tag``); no tag means ``latest``."""
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:  # no tag: the colon, if any, belonged to a registry port
        return image, "latest"
    return name, tag
