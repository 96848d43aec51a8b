"""ragsweep: retrieval evaluation for meeting-transcript RAG systems."""

__version__ = "0.1.0"
