{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "ragsweep.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name, plus the chart name unless the release already carries it. */}}
{{- define "ragsweep.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ragsweep.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "ragsweep.labels" -}}
helm.sh/chart: {{ include "ragsweep.chart" . }}
{{ include "ragsweep.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: ragsweep
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels; a component adds app.kubernetes.io/component beside them. */}}
{{- define "ragsweep.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragsweep.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Component name: "<fullname>-<component>". Call with (list $ "component"). */}}
{{- define "ragsweep.component" -}}
{{- printf "%s-%s" (include "ragsweep.fullname" (index . 0)) (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* An image by digest alone (what every pod runs): repository@sha256:... */}}
{{- define "ragsweep.digestImage" -}}
{{- printf "%s@%s" .repository .digest -}}
{{- end -}}

{{- define "ragsweep.postgresql.secretName" -}}
{{- default (include "ragsweep.component" (list . "postgresql")) .Values.postgresql.existingSecret -}}
{{- end -}}

{{- define "ragsweep.redis.secretName" -}}
{{- default (include "ragsweep.component" (list . "redis")) .Values.redis.existingSecret -}}
{{- end -}}

{{- define "ragsweep.objectStore.secretName" -}}
{{- default (include "ragsweep.component" (list . "object-store")) .Values.objectStore.existingSecret -}}
{{- end -}}

{{- define "ragsweep.objectStore.endpoint" -}}
{{- if eq .Values.objectStore.mode "internal" -}}
{{- printf "http://%s:9000" (include "ragsweep.component" (list . "object-store")) -}}
{{- else -}}
{{- .Values.objectStore.endpoint -}}
{{- end -}}
{{- end -}}

{{/* The TCP port of the object store's endpoint: explicit in the URL, else 443 (https) or 80 (http). */}}
{{- define "ragsweep.objectStore.port" -}}
{{- $url := urlParse (include "ragsweep.objectStore.endpoint" .) -}}
{{- $port := regexFind ":[0-9]+$" $url.host | trimPrefix ":" -}}
{{- if $port -}}{{- $port -}}{{- else if eq $url.scheme "http" -}}80{{- else -}}443{{- end -}}
{{- end -}}

{{- define "ragsweep.objectStore.url" -}}
{{- if .Values.objectStore.prefix -}}
{{- printf "s3://%s/%s" .Values.objectStore.bucket (trimAll "/" .Values.objectStore.prefix) -}}
{{- else -}}
{{- printf "s3://%s" .Values.objectStore.bucket -}}
{{- end -}}
{{- end -}}

{{/* OpenSearch's URL as its clients use it. With TLS, Kubernetes assembles it in the pod from
$(OPENSEARCH_USERNAME) and $(OPENSEARCH_PASSWORD) (ragsweep.env.opensearch lists them first). */}}
{{- define "ragsweep.opensearch.url" -}}
{{- if .Values.opensearch.tls.enabled -}}
{{- printf "https://$(OPENSEARCH_USERNAME):$(OPENSEARCH_PASSWORD)@%s:9200" (include "ragsweep.component" (list . "opensearch")) -}}
{{- else -}}
{{- printf "http://%s:9200" (include "ragsweep.component" (list . "opensearch")) -}}
{{- end -}}
{{- end -}}

{{/* OpenSearch's HTTP port inside its pod when nginx serves 9200 (TLS): loopback only. */}}
{{- define "ragsweep.opensearch.backendPort" -}}9201{{- end -}}

{{- define "ragsweep.opensearch.tlsSecretName" -}}
{{- default (include "ragsweep.component" (list . "opensearch-tls")) .Values.opensearch.tls.existingSecret -}}
{{- end -}}

{{- define "ragsweep.opensearch.authSecretName" -}}
{{- default (include "ragsweep.component" (list . "opensearch-auth")) .Values.opensearch.auth.existingSecret -}}
{{- end -}}

{{/* Where clients read the CA from: the generated CA-only Secret (no key beside it), or ca.crt of an existing TLS Secret. */}}
{{- define "ragsweep.opensearch.caSecretName" -}}
{{- default (include "ragsweep.component" (list . "opensearch-ca")) .Values.opensearch.tls.existingSecret -}}
{{- end -}}

{{/* The CA's folder in every OpenSearch client container (harness.sweep.k8s.env.CA_DIR for the launcher's Jobs). */}}
{{- define "ragsweep.opensearch.caDir" -}}/etc/ragsweep/opensearch-ca{{- end -}}

{{/* The CA volume of a pod with an OpenSearch client (nothing without TLS); its mount, below. */}}
{{- define "ragsweep.opensearch.caVolume" -}}
{{- if .Values.opensearch.tls.enabled }}
- name: opensearch-ca
  secret:
    secretName: {{ include "ragsweep.opensearch.caSecretName" . }}
    items:
      - {key: ca.crt, path: ca.crt}
    defaultMode: 0444
{{- end }}
{{- end -}}

{{- define "ragsweep.opensearch.caMount" -}}
{{- if .Values.opensearch.tls.enabled }}
- {name: opensearch-ca, mountPath: {{ include "ragsweep.opensearch.caDir" . }}, readOnly: true}
{{- end }}
{{- end -}}

{{/* The PostgreSQL DSN carries no password: libpq reads PGPASSWORD. */}}
{{- define "ragsweep.postgresql.dsn" -}}
{{- printf "postgresql://%s@%s:5432/%s" .Values.postgresql.user (include "ragsweep.component" (list . "postgresql")) .Values.postgresql.database -}}
{{- end -}}

{{/* Environment, one helper per service a container talks to, so that each container gets
the credentials of the services it uses and no other (credentials by secretKeyRef only).
Compose them per container: object store, OpenSearch, PostgreSQL, Redis, runtime. */}}

{{/* The object store: the artefact URL, its endpoint, and its access key pair. */}}
{{- define "ragsweep.env.objectStore" -}}
- name: RAGSWEEP_STORE
  value: {{ include "ragsweep.objectStore.url" . | quote }}
- name: RAGSWEEP_S3_ENDPOINT
  value: {{ include "ragsweep.objectStore.endpoint" . | quote }}
- name: AWS_DEFAULT_REGION
  value: {{ .Values.objectStore.region | quote }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "ragsweep.objectStore.secretName" . }}
      key: {{ .Values.objectStore.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "ragsweep.objectStore.secretName" . }}
      key: {{ .Values.objectStore.secretAccessKeyKey }}
{{- end -}}

{{/* OpenSearch: with TLS (the pod's nginx), the user, the password by secretKeyRef and the CA file (pair it with
ragsweep.opensearch.caVolume / caMount), then the URL Kubernetes assembles from them; else plain HTTP, no credential. */}}
{{- define "ragsweep.env.opensearch" -}}
{{- if .Values.opensearch.tls.enabled }}
- name: OPENSEARCH_USERNAME
  value: {{ .Values.opensearch.auth.username | quote }}
- name: OPENSEARCH_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "ragsweep.opensearch.authSecretName" . }}
      key: {{ .Values.opensearch.auth.passwordKey }}
- name: SSL_CERT_FILE
  value: {{ printf "%s/ca.crt" (include "ragsweep.opensearch.caDir" .) | quote }}
{{- end }}
- name: RAGSWEEP_OPENSEARCH_URL
  value: {{ include "ragsweep.opensearch.url" . | quote }}
- name: RAGSWEEP_OPENSEARCH_KNN_ENGINE
  value: {{ .Values.opensearch.knnEngine | quote }}
{{- end -}}

{{/* PostgreSQL: the DSN and PGPASSWORD. */}}
{{- define "ragsweep.env.postgresql" -}}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "ragsweep.postgresql.secretName" . }}
      key: {{ .Values.postgresql.passwordKey }}
- name: RAGSWEEP_PG_DSN
  value: {{ include "ragsweep.postgresql.dsn" . | quote }}
{{- end -}}

{{/* Redis: the password, then the URL Kubernetes assembles from it ($(REDIS_PASSWORD) must come first). */}}
{{- define "ragsweep.env.redis" -}}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "ragsweep.redis.secretName" . }}
      key: {{ .Values.redis.passwordKey }}
- name: RAGSWEEP_REDIS_URL
  value: {{ printf "redis://:$(REDIS_PASSWORD)@%s:6379/0" (include "ragsweep.component" (list . "redis")) | quote }}
{{- end -}}

{{/* What every harness process needs on a read-only root: caches on the scratch volume, no model hub. */}}
{{- define "ragsweep.env.runtime" -}}
- name: HF_HUB_OFFLINE
  value: "1"
- name: TRANSFORMERS_OFFLINE
  value: "1"
- name: XDG_CACHE_HOME
  value: /tmp/cache
- name: MPLCONFIGDIR
  value: /tmp/matplotlib
{{- end -}}

{{/* Container security context of every pod this chart runs. */}}
{{- define "ragsweep.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* A generated secret value kept across upgrades: the live Secret's value when there is one. */}}
{{- define "ragsweep.secretValue" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $key := index . 2 -}}
{{- $live := lookup "v1" "Secret" $root.Release.Namespace $name -}}
{{- if and $live $live.data (hasKey $live.data $key) -}}
{{- index $live.data $key -}}
{{- else -}}
{{- randAlphaNum 32 | b64enc -}}
{{- end -}}
{{- end -}}

{{/* Every problem with the values, collected and reported in one failure. */}}
{{- define "ragsweep.validateValues" -}}
{{- $problems := list -}}
{{- $digest := "^sha256:[0-9a-f]{64}$" -}}
{{- $required := list "cpu" "worker" -}}
{{- if .Values.gpu.enabled -}}{{- $required = append $required "gpu" -}}{{- end -}}
{{- if .Values.workers.embedding.gpu -}}{{- $required = append $required "gpuWorker" -}}{{- end -}}
{{- range $name := $required -}}
{{- $image := index $.Values.images $name -}}
{{- if not (regexMatch $digest $image.digest) -}}
{{- $problems = append $problems (printf "images.%s.digest: %q is not a sha256 digest; the Jobs run by digest only (images/build.sh prints them: --set images.%s.digest=sha256:...)" $name $image.digest $name) -}}
{{- end -}}
{{- end -}}
{{- $services := list "opensearch" "postgresql" "redis" -}}
{{- if eq .Values.objectStore.mode "internal" -}}{{- $services = append $services "objectStore" -}}{{- end -}}
{{- range $name := $services -}}
{{- $image := (index $.Values $name).image -}}
{{- if not (regexMatch $digest $image.digest) -}}
{{- $problems = append $problems (printf "%s.image.digest: %q is not a sha256 digest; every pod runs by digest (make images writes them to var/images/values.yaml)" $name $image.digest) -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.objectStore.mode "external" -}}
{{- if not .Values.objectStore.endpoint -}}
{{- $problems = append $problems "objectStore.endpoint: required when objectStore.mode is external" -}}
{{- end -}}
{{- if not .Values.objectStore.existingSecret -}}
{{- $problems = append $problems "objectStore.existingSecret: required when objectStore.mode is external (the chart never generates credentials for a store it does not run)" -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (not .Values.networkPolicy.externalObjectStoreCIDRs) -}}
{{- $problems = append $problems "networkPolicy.externalObjectStoreCIDRs: required when objectStore.mode is external and networkPolicy.enabled (the address ranges of objectStore.endpoint; without them the injector, arms and collector may reach no object store)" -}}
{{- end -}}
{{- else if .Values.objectStore.endpoint -}}
{{- $problems = append $problems "objectStore.endpoint: set only for mode external (internal uses the in-namespace server)" -}}
{{- else if .Values.networkPolicy.externalObjectStoreCIDRs -}}
{{- $problems = append $problems "networkPolicy.externalObjectStoreCIDRs: set only for objectStore.mode external (the internal server is reached by its pods' labels)" -}}
{{- end -}}
{{- if not .Values.opensearch.tls.enabled -}}
{{- range $key := list "tls.existingSecret" "auth.existingSecret" -}}
{{- if (index $.Values.opensearch (splitList "." $key | first)).existingSecret -}}
{{- $problems = append $problems (printf "opensearch.%s: set only when opensearch.tls.enabled (without TLS, OpenSearch asks for no credential)" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.workers.embedding.gpu (not .Values.gpu.enabled) -}}
{{- $problems = append $problems "workers.embedding.gpu: needs gpu.enabled (a GPU node for the embedding worker)" -}}
{{- end -}}
{{- if and .Values.workers.embedding.gpu (lt (int .Values.gpu.count) 1) -}}
{{- $problems = append $problems "gpu.count: must be at least 1 when workers.embedding.gpu is true" -}}
{{- end -}}
{{- if not .Values.corpus.names -}}
{{- $problems = append $problems "corpus.names: name at least one corpus to inject" -}}
{{- end -}}
{{- if ne (len .Values.corpus.names) (len (uniq .Values.corpus.names)) -}}
{{- $problems = append $problems "corpus.names: a corpus is named twice" -}}
{{- end -}}
{{- range $key, $value := .Values.gpu.nodeSelector -}}
{{- if hasKey $.Values.arm.nodeSelector $key -}}
{{- if eq (toString (index $.Values.arm.nodeSelector $key)) (toString $value) -}}
{{- $problems = append $problems (printf "arm.nodeSelector.%s: equals gpu.nodeSelector.%s, so CPU arms would land on GPU nodes" $key $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if gt (int .Values.jobs.parallelism) 64 -}}
{{- $problems = append $problems "jobs.parallelism: at most 64 Jobs at once (the launcher's watch and the API server's patience)" -}}
{{- end -}}
{{- $teamElsewhere := and .Values.embeddingCache.enabled .Values.embeddingCache.team.enabled .Values.embeddingCache.team.endpoint -}}
{{- if and $teamElsewhere .Values.networkPolicy.enabled (not .Values.networkPolicy.teamCacheCIDRs) -}}
{{- $problems = append $problems "networkPolicy.teamCacheCIDRs: required when embeddingCache.team.endpoint is set and networkPolicy.enabled (the address ranges of that endpoint; without them the injector and the embedding workers reach no team cache)" -}}
{{- else if and .Values.networkPolicy.teamCacheCIDRs (not $teamElsewhere) -}}
{{- $problems = append $problems "networkPolicy.teamCacheCIDRs: set only with embeddingCache.team.endpoint (and the cache and its team tier enabled); the release's own object store is reached as before" -}}
{{- end -}}
{{- if $problems -}}
{{- fail (printf "\n\nragsweep: %d problem(s) with the values:\n  - %s\n" (len $problems) (join "\n  - " $problems)) -}}
{{- end -}}
{{- end -}}

{{- /* The embedding cache's claim, volume and mount: the injector's build-state container and the
embedding workers see it at the same path, which the injector passes to the workers' tasks. */ -}}
{{- define "ragsweep.embeddingCache.claim" -}}
{{- .Values.embeddingCache.existingClaim | default (include "ragsweep.component" (list . "embedding-cache")) -}}
{{- end -}}

{{- define "ragsweep.embeddingCache.path" -}}/cache/embeddings{{- end -}}

{{- define "ragsweep.embeddingCache.volume" -}}
{{- if .Values.embeddingCache.enabled }}
- name: embedding-cache
  persistentVolumeClaim:
    claimName: {{ include "ragsweep.embeddingCache.claim" . }}
{{- end }}
{{- end -}}

{{- define "ragsweep.embeddingCache.mount" -}}
{{- if .Values.embeddingCache.enabled }}
- {name: embedding-cache, mountPath: {{ include "ragsweep.embeddingCache.path" . }}}
{{- end }}
{{- end -}}

{{- /* The team's embedding cache under it (values.yaml, embeddingCache.team): its s3:// URL, empty when off
(embeddingCache or team disabled); by default the release's object store at <url>/team-embeddings. */ -}}
{{- define "ragsweep.embeddingCache.teamUrl" -}}
{{- if and .Values.embeddingCache.enabled .Values.embeddingCache.team.enabled -}}
{{- .Values.embeddingCache.team.url | default (printf "%s/team-embeddings" (include "ragsweep.objectStore.url" .)) -}}
{{- end -}}
{{- end -}}

{{/* RAGSWEEP_TEAM_CACHE for the containers that encode (the injector's build-state, the embedding workers):
the URL, with RAGSWEEP_TEAM_CACHE_ENDPOINT only for a bucket elsewhere (else the team tier uses
RAGSWEEP_S3_ENDPOINT, which ragsweep.env.objectStore sets, with the key pair it reaches both with); off
otherwise, so that no image default decides it. */}}
{{- define "ragsweep.env.teamCache" -}}
{{- $url := include "ragsweep.embeddingCache.teamUrl" . -}}
- name: RAGSWEEP_TEAM_CACHE
  value: {{ $url | default "off" | quote }}
{{- if and $url .Values.embeddingCache.team.endpoint }}
- name: RAGSWEEP_TEAM_CACHE_ENDPOINT
  value: {{ .Values.embeddingCache.team.endpoint | quote }}
{{- end }}
{{- end -}}

{{/* The TCP port of embeddingCache.team.endpoint: explicit in the URL, else 443 (https) or 80 (http). */}}
{{- define "ragsweep.embeddingCache.teamPort" -}}
{{- $url := urlParse .Values.embeddingCache.team.endpoint -}}
{{- $port := regexFind ":[0-9]+$" $url.host | trimPrefix ":" -}}
{{- if $port -}}{{- $port -}}{{- else if eq $url.scheme "http" -}}80{{- else -}}443{{- end -}}
{{- end -}}
