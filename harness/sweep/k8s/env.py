"""What a Job's containers are told about the release's services: environment variables (plain values, and
secrets by ``secretKeyRef`` only) and the file of the CA that signed OpenSearch's certificate.

Kubernetes expands ``$(VAR)`` in a variable's value from the variables listed before it, so the settings that
refer to others (the OpenSearch URL, assembled from ``$(OPENSEARCH_USERNAME)`` and ``$(OPENSEARCH_PASSWORD)``)
come after the plain settings and the secrets: the URL with its password never stands in a pod spec or on a
command line.
"""

from __future__ import annotations

from kubernetes import client as k

from harness.sweep.k8s.settings import LauncherSettings

SCRATCH = "/tmp"
# Where a pod that talks to the release's OpenSearch finds the CA (the chart's ragsweep.opensearch.caPath)
CA_DIR = "/etc/ragsweep/opensearch-ca"
CA_VOLUME = "opensearch-ca"


def plain(name: str, value: str) -> k.V1EnvVar:
    return k.V1EnvVar(name=name, value=value)


def secret_ref(name: str, secret: str, key: str) -> k.V1EnvVar:
    return k.V1EnvVar(name=name, value_from=k.V1EnvVarSource(secret_key_ref=k.V1SecretKeySelector(name=secret,
                                                                                                   key=key)))


def store_env(settings: LauncherSettings) -> list[k.V1EnvVar]:
    """The object store, its endpoint and its credentials (by reference only)."""
    env = [plain("RAGSWEEP_STORE", settings.store)]
    if settings.s3_endpoint:
        env.append(plain("RAGSWEEP_S3_ENDPOINT", settings.s3_endpoint))
    env.append(plain("AWS_DEFAULT_REGION", settings.region))
    if settings.credentials is not None:
        for var, ref in (("AWS_ACCESS_KEY_ID", settings.credentials.access_key_id),
                         ("AWS_SECRET_ACCESS_KEY", settings.credentials.secret_access_key)):
            env.append(secret_ref(var, ref.name, ref.key))
    return env


def service_env(settings: LauncherSettings) -> list[k.V1EnvVar]:
    """The release's service settings: plain values, the secrets they need (by reference), then the values that
    refer to others with ``$(VAR)``; and SSL_CERT_FILE when OpenSearch speaks TLS (opensearch-py's first choice
    of CA file)."""
    values = sorted(settings.extra_env.items())
    env = [plain(name, value) for name, value in values if "$(" not in value]
    env += [secret_ref(s.name, s.secret, s.key) for s in settings.secret_env]
    env += [plain(name, value) for name, value in values if "$(" in value]
    if settings.opensearch_ca is not None:
        env.append(plain("SSL_CERT_FILE", f"{CA_DIR}/ca.crt"))
    return env


def runtime_env() -> list[k.V1EnvVar]:
    # The root filesystem is read-only: caches go to the scratch volume, and nothing may
    # reach a model hub (the embedding model is baked into the image).
    return [plain("HF_HUB_OFFLINE", "1"), plain("TRANSFORMERS_OFFLINE", "1"),
            plain("XDG_CACHE_HOME", f"{SCRATCH}/cache"), plain("MPLCONFIGDIR", f"{SCRATCH}/matplotlib")]


def ca_volume(settings: LauncherSettings) -> tuple[list[k.V1Volume], list[k.V1VolumeMount]]:
    """The CA file of the release's OpenSearch (one key of its Secret, read-only), or nothing without TLS."""
    ca = settings.opensearch_ca
    if ca is None:
        return [], []
    volume = k.V1Volume(name=CA_VOLUME, secret=k.V1SecretVolumeSource(
        secret_name=ca.secret, items=[k.V1KeyToPath(key=ca.key, path="ca.crt")], default_mode=0o444))
    return [volume], [k.V1VolumeMount(name=CA_VOLUME, mount_path=CA_DIR, read_only=True)]
