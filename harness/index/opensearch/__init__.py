"""The stack search backend: OpenSearch (k-NN + neural-search), and the writer of its index.

One index per corpus state, named from the state's identity (``ragsweep-state-<sha>``),
one shard, no replicas. Documents are the embedded builder's ``IndexDoc`` list with the
embedded build's own vectors (its ``vectors-{mode}.npy``), so both backends hold the same
documents and the same float32 vectors.

Modules, in the order imports run (docs/opensearch.md):

* ``client``: JSON over HTTP to one node (stdlib ``urllib``: nothing heavy is imported).
* ``mapping``: the index definition (analysis profiles, index sorting, the kNN field) and
  the state identity that names the index.
* ``queries``: the request bodies of the legs and aggregations, and their parsing.
* ``writer``: (re)create an index and bulk-write a state's documents into it.
* ``backend``: :class:`OpenSearchBackend`, the read-only ``SearchBackend``.
* ``settle``: refuse to measure an index that is still moving.
"""
