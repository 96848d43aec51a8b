"""CLI sub-commands: thin parsers that call the stages."""
