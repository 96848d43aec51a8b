"""The answerers, chosen by name (``--answerer``): none, reference, product.

Each records its name, how it parses, its mechanism per intent and whether it is the
production path. None of them is: ``reference`` is the instrument's control and
``product`` is this harness's stand-in for a product route (docs/answers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from harness.answers.mechanisms import Sources
from harness.answers.model import Answer, declined
from harness.answers.product import ProductAnswerer
from harness.answers.reference import ReferenceAnswerer
from harness.errors import UsageError


class Answerer(Protocol):
    name: str
    is_production_path: bool
    parser: str

    def mechanisms(self) -> dict[str, str]: ...

    def answer(self, question: str) -> Answer: ...


class NoneAnswerer:
    """Declines everything: the floor. No aggregation route exists, so EM 0 and answered 0."""

    name = "none"
    is_production_path = False
    parser = "none: every question is declined"

    def __init__(self, sources: Sources | None = None) -> None:
        self.sources = sources

    def mechanisms(self) -> dict[str, str]:
        return {}

    def answer(self, question: str) -> Answer:
        return declined("the none answerer declines every query (no aggregation route: the floor)")


ANSWERERS: dict[str, Callable[[Sources], Answerer]] = {
    "none": NoneAnswerer,
    "reference": ReferenceAnswerer,
    "product": ProductAnswerer,
}


def make_answerer(name: str, sources: Sources) -> Answerer:
    factory = ANSWERERS.get(name)
    if factory is None:
        raise UsageError(f"--answerer {name!r} is not one of {', '.join(ANSWERERS)}")
    return factory(sources)


def describe(answerer: Answerer) -> dict[str, Any]:
    """The answerer block of the results file."""
    return {
        "name": answerer.name,
        "is_production_path": answerer.is_production_path,
        "parser": answerer.parser,
        "mechanisms": dict(sorted(answerer.mechanisms().items())),
    }
