"""The catalogue as a JSON manifest: ``emit_manifest`` prints it, ``load_manifest`` reads a user's back.

A manifest is validated by the catalogue's own pydantic models (:mod:`harness.sweep.catalogue`);
every error names the file and the field path by arm and family name, on one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from harness.errors import InputDataError
from harness.inputfiles import read_json_input
from harness.sweep.catalogue import CATALOGUE, Catalogue


def catalogue_document(catalogue: Catalogue) -> dict[str, Any]:
    doc = catalogue.model_dump(mode="json", by_alias=True)
    for family in doc["families"]:
        family["contrasts"] = [list(pair) for pair in family["contrasts"]]
        for arm in family["arms"]:
            del arm["family"]  # implied by the enclosing family; load_manifest fills it back
            if arm["run"] is None:
                del arm["run"]
    return doc


def emit_manifest(catalogue: Catalogue | None = None) -> str:
    """The catalogue as the JSON document ``load_manifest`` reads back."""
    return json.dumps(catalogue_document(catalogue or CATALOGUE), indent=2, sort_keys=True) + "\n"


def _location(loc: Sequence[int | str], doc: Any) -> str:
    """``('families', 0, 'arms', 2, 'config')`` -> ``families[fusion].arms[rrf-60].config``."""
    parts: list[str] = []
    node = doc
    for item in loc:
        if isinstance(item, int):
            label = str(item)
            if isinstance(node, list) and 0 <= item < len(node):
                element = node[item]
                if isinstance(element, Mapping) and isinstance(element.get("name"), str):
                    label = element["name"]
                node = element
            else:
                node = None
            parts.append(f"[{label}]")
        else:
            parts.append(f".{item}" if parts else str(item))
            node = node.get(item) if isinstance(node, Mapping) else None
    return "".join(parts) or "(document)"


def parse_manifest(doc: Any, source: str) -> Catalogue:
    """Validate a manifest document; errors name the source and the field, on one line."""
    try:
        return Catalogue.model_validate(doc)
    except PydanticValidationError as e:
        problems = []
        for error in e.errors():
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(f"{_location(error['loc'], doc)}: {message}")
        raise InputDataError(f"{source}: {'; '.join(problems)}") from e


def read_manifest_document(path: Path) -> Any:
    """The manifest's JSON, read bounded (harness.inputfiles.read_json_input: its size and nesting)."""
    return read_json_input(path)


def load_manifest(path: Path) -> Catalogue:
    """Read a user's manifest (the shape ``emit_manifest`` prints)."""
    return parse_manifest(read_manifest_document(path), str(path))
