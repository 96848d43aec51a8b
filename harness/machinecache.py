"""Where what is built once per machine lives, outside every clone: the Python twin of stack/machine-cache.sh.

``RAGSWEEP_MACHINE_CACHE``, else ``/var/cache/ragsweep`` for root, else ``${XDG_CACHE_HOME:-~/.cache}/ragsweep``.
What lives there is keyed by its inputs (the embedding cache by model and text, the Kubernetes tools by
their pins, the registry's images by their inputs' sha256), so every clone of every commit may share it.
"""

from __future__ import annotations

import os
from pathlib import Path


def machine_cache() -> Path:
    """The machine's cache folder (not made here)."""
    chosen = os.environ.get("RAGSWEEP_MACHINE_CACHE")
    if chosen:
        return Path(chosen)
    if os.geteuid() == 0:
        return Path("/var/cache/ragsweep")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragsweep"
