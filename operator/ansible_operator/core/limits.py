"""How much text may leave a run for the API server, and the one way it is cut to fit.

A failure can say a lot (an ssh debug dump, a module's whole stderr); a condition message or an
Event note cut to its size stays readable and says how much it lost. Sizes are in bytes of UTF-8,
as the API server counts them.
"""

from __future__ import annotations

CONDITION_MESSAGE_BYTES = 32768  # metav1.Condition's message (maxLength 32768)
EVENT_NOTE_BYTES = 1024  # an events.k8s.io note (NoteLengthLimit)
_SMALLEST = 64  # room for some text and the note of any cut


def cut_note(cut: int) -> str:
    """What ends a cut text: how many bytes were left out."""
    return f" ... [cut: {cut} more bytes]"


def cap(text: str, limit: int) -> str:
    """`text` if it fits in `limit` bytes of UTF-8; else its start and `cut_note`, within `limit`
    bytes and never splitting a character."""
    if limit < _SMALLEST:
        raise ValueError(f"a cap of {limit} bytes leaves no room for the text; use {_SMALLEST}+")
    # surrogatepass: a lone surrogate (from a JSON escape) counts 3 bytes, as the API server's
    # replacement character does.
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    # The note for the whole length is at least as long as the note for what is finally cut.
    kept = limit - len(cut_note(len(data)))
    while data[kept] & 0xC0 == 0x80:  # a continuation byte: back to the character's start
        kept -= 1
    return data[:kept].decode("utf-8", "surrogatepass") + cut_note(len(data) - kept)
