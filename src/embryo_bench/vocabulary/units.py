"""Sizes as messages write them (imports nothing, so any module may use it)."""

from __future__ import annotations

MIB = 2**20
GIB = 2**30


def size_text(n_bytes: float) -> str:
    """A size for a message: "1.5 GiB", "300 MiB", "4.1 MiB", "12 KiB"."""
    if n_bytes >= GIB:
        return f"{n_bytes / GIB:,.1f} GiB"
    if n_bytes >= 100 * MIB:
        return f"{n_bytes / MIB:,.0f} MiB"
    if n_bytes >= MIB:
        return f"{n_bytes / MIB:,.1f} MiB"
    return f"{max(n_bytes, 0) / 1024:,.0f} KiB"


def px(side: int) -> str:
    """A square image's size for a message: "1,024x1,024 px"."""
    return f"{side:,}x{side:,} px"
