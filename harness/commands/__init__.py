"""CLI sub-commands: thin parsers that call the stages."""

from __future__ import annotations

import argparse


def count(text: str) -> int:
    """An argparse type for a count given explicitly: a whole number, 1 or more. Zero is refused (exit 2),
    never read as "the default": leaving the flag out is how to ask for that."""
    try:
        value = int(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text}: expected a whole number, 1 or more") from e
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected 1 or more (leave the flag out for the default)")
    return value
