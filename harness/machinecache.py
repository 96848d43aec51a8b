"""Where what is built once per machine lives, outside every clone: the Python twin of stack/machine-cache.sh.

``RAGSWEEP_MACHINE_CACHE``, else ``/var/cache/ragsweep`` for root, else ``${XDG_CACHE_HOME:-~/.cache}/ragsweep``.
What lives there is keyed by its inputs (the embedding cache by model and text, the Kubernetes tools by
their pins, the registry's images by their inputs' sha256), so every clone of every commit may share it.
The environment is read by the settings model (the CLI's and the jobs'), which passes it here.
"""

from __future__ import annotations

import os
from pathlib import Path


def machine_cache(chosen: str | None = None, xdg_cache_home: str | None = None) -> Path:
    """The machine's cache folder (not made here): ``chosen`` (RAGSWEEP_MACHINE_CACHE) when set, else root's,
    else the user's. A process with no home (a pod's non-root user that the image's passwd does not list,
    with no HOME: every Job's) gets ``var/cache``, relative as the caches were before; it never raises, since
    every entrypoint's settings ask for it."""
    if chosen:
        return Path(chosen)
    if os.geteuid() == 0:
        return Path("/var/cache/ragsweep")
    if xdg_cache_home:
        return Path(xdg_cache_home) / "ragsweep"
    home = os.path.expanduser("~")  # HOME, else the passwd entry; "~" unchanged when there is neither
    return Path("var/cache") if home == "~" else Path(home) / ".cache" / "ragsweep"
