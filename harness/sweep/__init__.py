"""Sweeps: the arm catalogue, artefact storage, the collector and the agreement analysis.

``catalogue`` (arms as data) -> an executor runs each arm's bench into a store (``storage``)
-> ``collect`` compares every arm with its family control (``stats``: paired tests, Holm) and
draws ``plot`` -> ``agreement`` asks whether two corpora rank the arms' changes alike.
Heavy libraries (boto3, matplotlib, scipy) load only where they are used.
"""
