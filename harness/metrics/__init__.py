"""Metrics stage: the trec_eval engine, run normalisation and file-level measures."""
