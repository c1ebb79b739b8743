#!/bin/sh
# Regenerates localhost.der and localhost-key.der, the fixed certificate and
# key of `pace serve --tls` (see ../tls.rs). Needs OpenSSL 3. Run it here;
# nothing else needs it: the files are committed and embedded in the binary.
#
# ECDSA P-256, self-signed, valid from 2000 to 2100 for localhost, 127.0.0.1
# and ::1; an end-entity certificate (CA:FALSE, serverAuth), as webpki wants
# of a certificate that is also its own trust anchor. `openssl ca` is used
# for its fixed start date: a certificate "not yet valid" on a machine whose
# clock is behind would break every TLS test there. The subject is not just
# CN=localhost: a trust store holding another certificate of that name (such
# as Debian's snakeoil) would make a client that does not trust this one
# report a confusing signature error instead of an unknown issuer.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/ca.cnf" <<'CONFIG'
[ca]
default_ca = local
[local]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
copy_extensions = none
x509_extensions = server
[any]
organizationName = supplied
commonName = supplied
[server]
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
CONFIG
here=$(pwd)
cd "$work"
touch index.txt
echo 01 >serial
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
openssl req -new -key key.pem -out request.csr \
    -subj "/O=pace/CN=pace serve --tls (public key, local use only)"
openssl ca -batch -config ca.cnf -selfsign -keyfile key.pem -in request.csr \
    -startdate 20000101000000Z -enddate 21000101000000Z -notext -out cert.pem
openssl x509 -in cert.pem -outform DER -out "$here/localhost.der"
openssl pkcs8 -topk8 -nocrypt -in key.pem -outform DER -out "$here/localhost-key.der"
