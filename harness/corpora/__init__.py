"""Corpora: the source registry, pinned manifests, fetch/verify, and readers into the model.

Modules, in the order data travels: ``registry`` (what each corpus is and its licence
tier), ``manifest`` (the pinned artefact list), ``fetch``/``integrity`` (download and
offline verification), ``qmsum`` with ``timing`` and ``classify`` (reading QMSum into
:mod:`harness.model`), and ``selfreport`` (BM25 gold-meeting ranks per domain).
Nothing here imports a heavy library at import time.
"""
