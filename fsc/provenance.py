"""Where a result came from: the git commit of the checkout this package runs from."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__all__ = ["source_commit"]

#: The checkout holding the package (``fsc/`` sits at its top).
CHECKOUT = Path(__file__).resolve().parents[1]


@functools.cache
def source_commit(*, mark_edits: bool = True) -> str | None:
    """``git rev-parse HEAD`` of the checkout this package runs from, followed by ``+`` when tracked files were
    edited since (with ``mark_edits``); ``None`` outside a checkout (an installed copy), without git, or when
    git fails or takes more than 5 seconds."""
    if not (CHECKOUT / ".git").exists():  # an installed copy, not a checkout (which another repository may contain)
        return None
    try:
        git = ["git", "-C", str(CHECKOUT)]
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        if not mark_edits:
            return head or None
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+" if dirty.stdout.strip() else "")
