"""Index stage: chunking, embedding text, digests, search backends, provenance."""
