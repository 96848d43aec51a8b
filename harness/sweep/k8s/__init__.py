"""Run a sweep's arms as Kubernetes Jobs in the namespace a ragsweep chart release owns.

The modules follow the data flow and stay apart: ``settings`` (what the chart tells the
launcher, read from its ConfigMap), ``builders`` (pure functions: arm -> V1Job), ``env`` (what their
containers are told about the release's services: variables, secrets by reference, OpenSearch's CA), ``submit``
(create/replace Jobs, retrying what is transient), ``watch`` (wait for Complete/Failed with
an overall timeout, and say why a Job failed), ``sync`` (folders in and out of the object
store as one archive: the corpus state, the reranker) and ``executor`` (the ``Executor``
protocol over all of them). Nothing here imports ``kubernetes`` at module import time
except the modules that need its models; ``harness.sweep.k8s`` itself stays import-light.
"""
