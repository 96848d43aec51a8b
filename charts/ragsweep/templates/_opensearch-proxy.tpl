{{/*
nginx in front of OpenSearch (opensearch.tls.enabled): TLS and HTTP basic auth on 9200, OpenSearch on the pod's
loopback. Run as `nginx -p /tmp/ -e stderr -c <dir>/nginx.conf`: tls.crt, tls.key and htpasswd are read beside this
file (relative paths resolve against -c's folder: the projected volume), the pid file and temp folders under -p
(the container's /tmp, an emptyDir), so the root filesystem stays read-only. tests/test_opensearch_proxy.py runs
this file, as rendered, with Debian 12's nginx in front of the local stack's OpenSearch.
*/}}
{{- define "ragsweep.opensearch.proxyConfig" -}}
# charts/ragsweep/templates/_opensearch-proxy.tpl: TLS and basic auth in front of OpenSearch on 127.0.0.1
worker_processes 1;
daemon off;
pid nginx.pid;
error_log stderr warn;

events {
  worker_connections 1024;
}

http {
  access_log off;
  server_tokens off;
  client_body_temp_path client_body;
  proxy_temp_path proxy;
  fastcgi_temp_path fastcgi;
  uwsgi_temp_path uwsgi;
  scgi_temp_path scgi;

  upstream opensearch {
    server 127.0.0.1:{{ include "ragsweep.opensearch.backendPort" . }};
    keepalive 32;
  }

  server {
    listen 9200 ssl;
    ssl_certificate tls.crt;
    ssl_certificate_key tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;

    # nginx reads the file on every request: a rotated password takes effect without a restart
    auth_basic "opensearch";
    auth_basic_user_file htpasswd;

    # OpenSearch's own http.max_content_length (100mb) decides what a _bulk may carry
    client_max_body_size 100m;

    location / {
      proxy_pass http://opensearch;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # OpenSearch asks for nothing: the password stops here
      proxy_set_header Authorization "";
      # a pass-through: bodies stream both ways, nothing is spooled to the pod's disk
      proxy_request_buffering off;
      proxy_buffering off;
      # longer than the harness client's own timeout (120 s), which decides
      proxy_read_timeout 600s;
      proxy_send_timeout 600s;
    }
  }
}
{{- end -}}

{{/* The OpenSearch container's exec probes while nginx serves 9200: the kubelet cannot reach the pod's loopback,
so bash (its /dev/tcp) asks OpenSearch on 127.0.0.1 itself. Call with (list $ "PATH"); PATH "" only connects. */}}
{{- define "ragsweep.opensearch.probe" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- $port := include "ragsweep.opensearch.backendPort" $root -}}
{{- if $path -}}
{{- printf "exec 3<>/dev/tcp/127.0.0.1/%s && printf 'GET %s HTTP/1.0\\r\\n\\r\\n' >&3 && read -r -t 5 _ code _ <&3 && [ \"$code\" = 200 ]" $port $path -}}
{{- else -}}
{{- printf "exec 3<>/dev/tcp/127.0.0.1/%s" $port -}}
{{- end -}}
{{- end -}}
