#!/bin/sh
# S3Proxy's properties from the environment (the chart sets them, credentials from a Secret),
# written to /tmp with mode 600, then the server in the foreground.
set -eu
: "${S3PROXY_IDENTITY:?}" "${S3PROXY_CREDENTIAL:?}"
conf=/tmp/s3proxy.properties
umask 077
cat > "$conf" <<PROPS
s3proxy.endpoint=${S3PROXY_ENDPOINT:-http://0.0.0.0:9000}
s3proxy.authorization=${S3PROXY_AUTHORIZATION:-aws-v2-or-v4}
s3proxy.identity=$S3PROXY_IDENTITY
s3proxy.credential=$S3PROXY_CREDENTIAL
jclouds.provider=${JCLOUDS_PROVIDER:-filesystem}
jclouds.filesystem.basedir=${JCLOUDS_FILESYSTEM_BASEDIR:-/data}
PROPS
exec /opt/java/bin/java ${JAVA_OPTS:--Xmx256m} -Djava.io.tmpdir=/tmp -jar /opt/s3proxy/s3proxy.jar --properties "$conf"
