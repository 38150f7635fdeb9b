"""The core's one error, alone in a light module: the sensors catch it around every cursor
read, and importing it must not load the pydantic cursor models it guards (they load with a
sensor's first tick, not with its definition)."""

__all__ = ["CursorError"]


class CursorError(ValueError):
    """The cursor could not be read (corrupt, foreign, or from another version)."""
