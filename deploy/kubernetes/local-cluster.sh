#!/usr/bin/env bash
# local-cluster.sh up|down|env — a single-node Kubernetes v1.32.0 on this machine, to try
# deploy/kubernetes (run.sh, job.yaml) against a real cluster without the internet beyond the
# Go module proxy and Debian's archive. See docs/scale-out.md and issue 35.
#
#   up    build (or reuse) the Kubernetes binaries, install etcd-server/containerd/runc, build and
#         import the images pace:local and pause:local, start etcd, kube-apiserver,
#         kube-controller-manager, kube-scheduler, containerd and the kubelet; wait for a Ready node
#   env   print the lines that point kubectl at it:  eval "$(local-cluster.sh env)"
#   down  stop what up started (by recorded process ids), unmount, remove its cgroups, and say
#         what, if anything, remains
#
# Everything listens on 127.0.0.1. No kernel setting, iptables rule or network configuration of
# the machine is changed: the kubelet's wishes are met inside a private mount namespace.
# Pods must use hostNetwork: true and imagePullPolicy: Never or IfNotPresent (no pod network,
# no registry): run.sh --host-network --image pace:local.
#
# Needs: root, Go 1.23 or later, gcc, openssl, curl, cgroup v1 (the only kind tried; the kubelet
# uses the cgroupfs driver); etcd-server, containerd and runc are apt-get installed when missing.
# Tried on a 2-core Debian 12 VM: up 423 s cold (empty Go caches), 6 s with the binaries cached;
# a 3-shard run.sh run merged exactly what pace serve counted; down left nothing behind.
set -euo pipefail

K8S_VERSION=v1.32.0
STAGING_VERSION=v0.32.0
CACHE=${PACE_K8S_CACHE:-$HOME/.cache/pace-k8s}
BIN=$CACHE/$K8S_VERSION/bin
STATE=${PACE_K8S_STATE:-/tmp/pace-k8s}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

say() { echo "local-cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# --- Kubernetes binaries -----------------------------------------------------------------------

binaries_present() {
	local c
	for c in "${COMMANDS[@]}"; do [[ -x $BIN/$c ]] || return 1; done
}

# A main module requiring k8s.io/kubernetes, with every staging module it replaces by
# ./staging/src/... (useless outside its own repository) replaced by the published v0.32.0.
# `go install pkg@version` refuses replace directives, hence the module and `go build`.
write_build_module() {
	local dir=$1 mod
	mkdir -p "$dir"
	mod=$(curl -fsS "$(go env GOPROXY | cut -d, -f1)/k8s.io/kubernetes/@v/$K8S_VERSION.mod") ||
		die "cannot fetch k8s.io/kubernetes $K8S_VERSION's go.mod from the Go module proxy"
	{
		echo "module pace.local/k8sbuild"
		echo
		echo "go 1.23"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "$mod" | sed -nE 's#^[[:space:]]*(replace[[:space:]]+)?(k8s\.io/[^[:space:]]+)[[:space:]]+=>[[:space:]]+\./staging/.*#replace \2 => \2 '"$STAGING_VERSION"'#p'
	} >"$dir/go.mod"
	[[ $(grep -c '^replace' "$dir/go.mod") -ge 20 ]] ||
		die "found too few staging modules in k8s.io/kubernetes's go.mod ($dir/go.mod)"
}

# The version the binaries report (kubectl version, the node's kubelet version): what
# Kubernetes' own build stamps in from git, absent from a module build.
version_ldflags() {
	local pkg v=${K8S_VERSION#v}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean ' \
			"$pkg" "$K8S_VERSION" "$pkg" "${v%%.*}" "$pkg" "$(echo "$v" | cut -d. -f2)" "$pkg"
	done
}

# Nice and one package at a time: the machine is shared (2 cores).
build_binaries() {
	local dir=$CACHE/$K8S_VERSION/module c log=$CACHE/$K8S_VERSION/build.log
	say "building Kubernetes $K8S_VERSION into $BIN (a few minutes; log: $log)"
	write_build_module "$dir"
	mkdir -p "$BIN"
	(
		cd "$dir"
		: >"$log"
		for c in "${COMMANDS[@]}"; do
			[[ -x $BIN/$c ]] && continue
			GOFLAGS="-mod=mod -p=1" CGO_ENABLED=0 nice -n 10 \
				go build -ldflags "$(version_ldflags)" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c" >>"$log" 2>&1 ||
				die "go build of $c failed; read $log"
			mv "$BIN/$c.tmp" "$BIN/$c"
		done
	)
}

ensure_binaries() {
	binaries_present && return 0
	command -v go >/dev/null || die "Go is needed to build Kubernetes (https://go.dev/dl)"
	build_binaries
}

# --- host packages -----------------------------------------------------------------------------

# Debian's etcd-server (3.4 serves Kubernetes 1.32), containerd (1.6) and runc, and the tools up uses.
ensure_packages() {
	local missing=()
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v containerd >/dev/null || missing+=(containerd)
	command -v runc >/dev/null || missing+=(runc)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v curl >/dev/null || missing+=(curl)
	command -v gcc >/dev/null || missing+=(gcc libc6-dev)
	[[ ${#missing[@]} -eq 0 ]] && return 0
	[[ $(id -u) -eq 0 ]] || die "needs ${missing[*]}: run as root, or first: sudo apt-get install ${missing[*]}"
	say "installing ${missing[*]} (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >"$STATE/log/apt.log" 2>&1 ||
		die "apt-get install ${missing[*]} failed; read $STATE/log/apt.log"
}

# --- certificates ------------------------------------------------------------------------------

# sign NAME SUBJECT [SUBJECT_ALT_NAMES]: NAME.key and NAME.crt signed by the cluster's CA.
sign() {
	local name=$1 subject=$2 san=${3:-} pki=$STATE/pki
	openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subject" \
		-out "$pki/$name.csr" 2>/dev/null
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=serverAuth,clientAuth"
		if [[ -n $san ]]; then echo "subjectAltName=$san"; fi
	} >"$pki/$name.ext"
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 30 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}

# A CA of its own, the API server's serving certificate, the kubelet's, one client certificate
# in system:masters (this is a one-user cluster on one machine: the components share it), and
# the service-account key pair.
make_certificates() {
	local pki=$STATE/pki host
	host=$(hostname)
	mkdir -p "$pki"
	openssl req -x509 -new -newkey rsa:2048 -nodes -days 30 -subj "/CN=pace-local-ca" \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
	sign apiserver "/CN=kube-apiserver" \
		"IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	sign kubelet "/CN=$host" "DNS:$host,IP:127.0.0.1"
	sign admin "/O=system:masters/CN=pace-admin"
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	cat >"$STATE/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: pace-local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: $pki/ca.crt
users:
- name: pace-admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: pace-local
  context: {cluster: pace-local, user: pace-admin}
current-context: pace-local
KC
}

# --- images ------------------------------------------------------------------------------------

# blob FILE: moves FILE into the OCI layout's blobs, prints "DIGEST SIZE".
blob() {
	local file=$1 layout=$2 digest size
	digest=$(sha256sum "$file" | cut -d' ' -f1)
	size=$(stat -c %s "$file")
	mkdir -p "$layout/blobs/sha256"
	mv "$file" "$layout/blobs/sha256/$digest"
	echo "$digest $size"
}

# oci_archive NAME ROOTFS ENTRYPOINT USER WORKDIR OUT: a one-layer image as an OCI archive
# (uncompressed layer, so its diff id is its digest), named docker.io/library/NAME for
# containerd, which is what the kubelet makes of an image "NAME".
oci_archive() {
	local name=$1 rootfs=$2 entrypoint=$3 user=$4 workdir=$5 out=$6
	local layout layer config manifest ld ls cd cs md ms
	layout=$(mktemp -d "$STATE/images/layout.XXXX")
	layer=$layout/layer.tar
	tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$rootfs" -cf "$layer" .
	read -r ld ls < <(blob "$layer" "$layout")
	config=$layout/config.json
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"User":"%s","WorkingDir":"%s","Env":["PATH=/usr/local/bin:/usr/bin:/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$entrypoint" "$user" "$workdir" "$ld" >"$config"
	read -r cd cs < <(blob "$config" "$layout")
	manifest=$layout/manifest.json
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$cd" "$cs" "$ld" "$ls" >"$manifest"
	read -r md ms < <(blob "$manifest" "$layout")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"docker.io/library/%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$md" "$ms" "$name" "${name#*:}" >"$layout/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
	tar -C "$layout" -cf "$out" oci-layout index.json blobs
	rm -rf "$layout"
}

# The pod sandbox's process: sleeps until told to stop. Static, so the image is this file alone.
build_pause_image() {
	local root=$STATE/images/pause-root
	mkdir -p "$root"
	cat >"$STATE/images/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>
static void stop(int sig) { (void)sig; _exit(0); }
int main(void) {
	signal(SIGINT, stop);
	signal(SIGTERM, stop);
	for (;;) pause();
}
C
	gcc -static -O2 -o "$root/pause" "$STATE/images/pause.c" || die "gcc -static of pause failed (libc6-dev needed)"
	oci_archive pause:local "$root" /pause 65535:65535 / "$STATE/images/pause.tar"
}

# pace from this checkout's release build with the glibc libraries it links (ldd), at the
# paths ldd names, so the binary runs unchanged; user 10001 as in the Dockerfile.
build_pace_image() {
	local pace=$REPO/target/release/pace root=$STATE/images/pace-root lib
	if [[ ! -x $pace ]]; then
		say "no $pace: building it (cargo build --release --bin pace)"
		(cd "$REPO" && nice -n 10 cargo build --release --locked --bin pace -j1) >"$STATE/log/cargo.log" 2>&1 ||
			die "cargo build failed; read $STATE/log/cargo.log"
	fi
	mkdir -p "$root/usr/local/bin" "$root/files" "$root/etc/ssl/certs" "$root/tmp"
	chmod 1777 "$root/tmp"
	install -m 0755 "$pace" "$root/usr/local/bin/pace"
	for lib in $(ldd "$pace" | grep -oE '/[^ ]+'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"; fi
	echo 'pace:x:10001:10001::/nonexistent:/bin/false' >"$root/etc/passwd"
	echo 'pace:x:10001:' >"$root/etc/group"
	oci_archive pace:local "$root" /usr/local/bin/pace 10001:10001 /files "$STATE/images/pace.tar"
}

import_images() {
	local img
	for img in pause pace; do
		ctr --address "$STATE/containerd/containerd.sock" -n k8s.io images import \
			"$STATE/images/$img.tar" >>"$STATE/log/import.log" 2>&1 ||
			die "ctr images import of $img failed; read $STATE/log/import.log"
	done
}

# --- configuration -----------------------------------------------------------------------------

write_configs() {
	mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/sysctl"
	# restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, so runc cannot give containers
	# the negative OOM scores the kubelet asks for. The sandbox image is the one imported.
	cat >"$STATE/containerd/config.toml" <<TOML
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
[grpc]
  address = "$STATE/containerd/containerd.sock"
[ttrpc]
  address = "$STATE/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/library/pause:local"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$STATE/cni/bin"
    conf_dir = "$STATE/cni/net.d"
TOML
	# Only so that the runtime reports its network ready (and the node Ready): pods use the
	# host's network, so no CNI plugin is ever run.
	cat >"$STATE/cni/net.d/10-loopback.conflist" <<'CNI'
{"cniVersion": "0.4.0", "name": "pace-loopback", "plugins": [{"type": "loopback"}]}
CNI
	# makeIPTablesUtilChains: false, no iptables rule is made. The thresholds keep a small VM's
	# disk from tainting the node, and image GC from deleting the imported images.
	cat >"$STATE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$STATE/containerd/containerd.sock
tlsCertFile: $STATE/pki/kubelet.crt
tlsPrivateKeyFile: $STATE/pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: Webhook}
makeIPTablesUtilChains: false
failSwapOn: false
protectKernelDefaults: false
podLogsDir: $STATE/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
YAML
}

# The values the kubelet sets at start; a setting that differs on this machine is covered, in the
# node's mount namespace only, by a file holding the wanted value, so the kubelet finds it set.
KUBELET_SYSCTLS=(vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1
	kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000)

# --- processes ---------------------------------------------------------------------------------

# start NAME COMMAND...: in the background, its output in log/NAME.log, its pid in pid/NAME.
start() {
	local name=$1
	shift
	"$@" >"$STATE/log/$name.log" 2>&1 &
	echo $! >"$STATE/pid/$name"
}

# wait_for WHAT SECONDS LOG COMMAND...: until COMMAND succeeds, or say what failed.
wait_for() {
	local what=$1 seconds=$2 log=$3 i
	shift 3
	for ((i = 0; i < seconds * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	say "$what did not come up within ${seconds}s; read $log:"
	tail -n 15 "$log" >&2 || true
	return 1
}

start_control_plane() {
	local pki=$STATE/pki
	start etcd etcd --name pace-local --data-dir "$STATE/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster pace-local=http://127.0.0.1:2380
	wait_for etcd 30 "$STATE/log/etcd.log" curl -fsS http://127.0.0.1:2379/health || return 1
	# --endpoint-reconciler-type=none: the "kubernetes" service would need a non-loopback address.
	# The kubelet is reached by the node's hostname, which resolves to 127.0.0.1.
	start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
		--endpoint-reconciler-type=none --service-cluster-ip-range=10.0.0.0/24 \
		--client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" \
		--tls-private-key-file="$pki/apiserver.key" \
		--kubelet-client-certificate="$pki/admin.crt" --kubelet-client-key="$pki/admin.key" \
		--kubelet-preferred-address-types=Hostname \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
		--authorization-mode=Node,RBAC
	wait_for kube-apiserver 60 "$STATE/log/kube-apiserver.log" \
		"$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" get --raw /readyz || return 1
	start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$STATE/kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false --root-ca-file="$pki/ca.crt" \
		--service-account-private-key-file="$pki/sa.key" \
		--authentication-kubeconfig="$STATE/kubeconfig" --authorization-kubeconfig="$STATE/kubeconfig"
	start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$STATE/kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false \
		--authentication-kubeconfig="$STATE/kubeconfig" --authorization-kubeconfig="$STATE/kubeconfig"
}

# Runs inside `unshare --mount`: covers the kernel settings the kubelet would change, then
# starts containerd and the kubelet, which must share this namespace (the kubelet's volume
# mounts are what containerd binds into containers).
FIXED_PATHS=(/run/containerd /var/lib/kubelet /var/log/containers)

node_main() {
	local entry path want
	for entry in "${KUBELET_SYSCTLS[@]}"; do
		path=/proc/sys/${entry%=*} want=${entry#*=}
		[[ $(cat "$path") == "$want" ]] && continue
		mkdir -p "$(dirname "$STATE/sysctl/${entry%=*}")"
		echo "$want" >"$STATE/sysctl/${entry%=*}"
		mount --bind "$STATE/sysctl/${entry%=*}" "$path"
	done
	start containerd containerd --config "$STATE/containerd/config.toml"
	wait_for containerd 30 "$STATE/log/containerd.log" \
		ctr --address "$STATE/containerd/containerd.sock" version || exit 1
	touch "$STATE/containerd.ready"
	# The images are imported (from outside) before the kubelet starts.
	wait_for "image import" 120 "$STATE/log/import.log" test -e "$STATE/images.ready" || exit 1
	start kubelet "$BIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/kubeconfig" \
		--root-dir="$STATE/kubelet"
	wait
}

start_node() {
	# Paths made whatever the configuration says, recorded when absent so that `down` removes
	# them: containerd 1.6 puts its shims' sockets and runc's state under /run/containerd; the
	# kubelet makes /var/lib/kubelet/device-plugins and /var/log/containers.
	local path
	for path in "${FIXED_PATHS[@]}"; do
		if [[ ! -e $path ]]; then echo "$path" >>"$STATE/made-paths"; fi
	done
	unshare --mount --propagation private -- "$HERE/local-cluster.sh" _node >"$STATE/log/node.log" 2>&1 &
	echo $! >"$STATE/pid/node"
	sleep 0.5
	readlink "/proc/$(cat "$STATE/pid/node")/ns/mnt" >"$STATE/node-mnt-ns"
	wait_for containerd 30 "$STATE/log/containerd.log" test -e "$STATE/containerd.ready" || return 1
	import_images
	touch "$STATE/images.ready"
}

node_ready() {
	[[ $("$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" get nodes \
		-o 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

# Until the node is Ready (at most 2 minutes), or the kubelet has exited.
wait_node_ready() {
	local i log=$STATE/log/kubelet.log
	for ((i = 0; i < 600; i++)); do
		node_ready && return 0
		if [[ -s $STATE/pid/kubelet ]] && ! kill -0 "$(cat "$STATE/pid/kubelet")" 2>/dev/null; then
			say "the kubelet exited; read $log:"
			tail -n 15 "$log" >&2
			return 1
		fi
		sleep 0.2
	done
	say "no Ready node within 120s; read $log. The nodes:"
	"$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" describe nodes >&2 2>&1 ||
		say "(kubectl describe nodes failed)"
	return 1
}

# --- commands ----------------------------------------------------------------------------------

cmd_up() {
	local t0=$SECONDS
	[[ $(id -u) -eq 0 ]] || die "up needs root: containerd and the kubelet run as root, in a private mount namespace; and apt-get install of etcd-server, containerd and runc when missing"
	if [[ -e $STATE/pid ]] && pids_alive; then die "already up (state in $STATE); run down first"; fi
	rm -rf "$STATE"
	mkdir -p "$STATE/log" "$STATE/pid" "$STATE/images" "$STATE/cni/bin"
	ensure_packages
	ensure_binaries
	echo "$BIN" >"$STATE/bin-path"
	say "certificates, configuration and images in $STATE"
	make_certificates
	write_configs
	build_pause_image
	build_pace_image
	say "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
	start_control_plane || fail_up
	say "starting containerd and the kubelet"
	start_node || fail_up
	wait_node_ready || fail_up
	say "up in $((SECONDS - t0))s: eval \"\$($0 env)\"; pods need hostNetwork: true and imagePullPolicy: Never"
}

fail_up() {
	die "up failed (the logs are in $STATE/log); run $0 down to stop what started"
}

# The binaries up used (recorded: PACE_K8S_CACHE or HOME may differ here). The kubeconfig's key
# is root's: use it as root.
cmd_env() {
	local bin=$BIN
	if [[ -s $STATE/bin-path ]]; then bin=$(cat "$STATE/bin-path"); fi
	echo "export KUBECONFIG=$STATE/kubeconfig"
	echo "export PATH=$bin:$REPO/target/release:\$PATH"
}

pids_alive() {
	local f
	for f in "$STATE"/pid/*; do
		if [[ -e $f ]] && kill -0 "$(cat "$f")" 2>/dev/null; then return 0; fi
	done
	return 1
}

# The processes in the node's mount namespace: containerd, the kubelet, the shims and containers.
node_processes() {
	local ns p
	[[ -s $STATE/node-mnt-ns ]] || return 0
	ns=$(cat "$STATE/node-mnt-ns")
	for p in /proc/[0-9]*; do
		if [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$ns" ]]; then echo "${p#/proc/}"; fi
	done
	return 0
}

# The processes in the kubelet's cgroups: the containers, pause included. They have mount
# namespaces of their own, so node_processes does not see them.
pod_processes() {
	local d
	for d in /sys/fs/cgroup/*/kubepods; do
		if [[ -d $d ]]; then find "$d" -name cgroup.procs -exec cat {} +; fi
	done | sort -un
}

# stop PID...: TERM, then KILL what is left after 10 s.
stop() {
	local i p alive
	[[ $# -gt 0 ]] || return 0
	kill -TERM "$@" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		alive=()
		for p in "$@"; do
			if kill -0 "$p" 2>/dev/null; then alive+=("$p"); fi
		done
		[[ ${#alive[@]} -gt 0 ]] || return 0
		sleep 0.2
	done
	say "killing ${alive[*]} (still running 10 s after SIGTERM)"
	kill -KILL "${alive[@]}" 2>/dev/null || true
	sleep 0.5
}

cmd_down() {
	local name pids remains=0 d
	[[ $(id -u) -eq 0 ]] || die "down needs root"
	[[ -d $STATE ]] || { say "nothing to stop ($STATE does not exist)"; return 0; }
	# The kubelet first (it would restart containers), then the containers, then everything in
	# the node's namespace, whose mounts go with its last process; then the control plane.
	if [[ -e $STATE/pid/kubelet ]]; then stop "$(cat "$STATE/pid/kubelet")"; fi
	mapfile -t pids < <(pod_processes)
	stop "${pids[@]}"
	mapfile -t pids < <(node_processes)
	stop "${pids[@]}"
	for name in kube-scheduler kube-controller-manager kube-apiserver etcd node; do
		if [[ -e $STATE/pid/$name ]]; then stop "$(cat "$STATE/pid/$name")"; fi
	done
	# The kubelet's cgroups (cgroupfs driver, cgroup v1): deepest first.
	for d in /sys/fs/cgroup/*/kubepods; do
		if [[ -d $d ]]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
	done
	if [[ -e $STATE/made-paths ]]; then
		while read -r d; do rm -rf "$d"; done <"$STATE/made-paths"
	fi
	# What remains, if anything.
	mapfile -t pids < <(node_processes; pod_processes)
	for name in "$STATE"/pid/*; do
		if [[ -e $name ]] && kill -0 "$(cat "$name")" 2>/dev/null; then pids+=("$(cat "$name")"); fi
	done
	if [[ ${#pids[@]} -gt 0 ]]; then
		say "still running: $(ps -o pid=,comm= -p "${pids[*]// /,}" | tr '\n' ' ')"
		remains=1
	fi
	if grep -qF "$STATE" /proc/self/mountinfo; then
		say "still mounted: $(grep -F "$STATE" /proc/self/mountinfo | cut -d' ' -f5 | tr '\n' ' ')"
		remains=1
	fi
	for d in /sys/fs/cgroup/*/kubepods; do
		if [[ -d $d ]]; then say "cgroup left: $d" && remains=1; fi
	done
	if ss -ltnH 2>/dev/null | grep -qE '127\.0\.0\.1:(2379|2380|6443|10248|10250|10257|10259) '; then
		say "still listening: $(ss -ltnH | grep -E '127\.0\.0\.1:(2379|2380|6443|10248|10250|10257|10259) ' | awk '{print $4}' | tr '\n' ' ')"
		remains=1
	fi
	if [[ -e $STATE/made-paths ]]; then
		while read -r d; do
			if [[ -e $d ]]; then say "left: $d" && remains=1; fi
		done <"$STATE/made-paths"
	fi
	[[ $remains -eq 0 ]] || die "down left the above behind"
	# Keep the logs; the rest (etcd data, containerd's root, certificates) goes.
	find "$STATE" -mindepth 1 -maxdepth 1 ! -name log -exec rm -rf {} +
	say "down: no process, mount, cgroup, listener or path of the cluster remains (logs kept in $STATE/log)"
}

main() {
	case ${1:-} in
	up) cmd_up ;;
	down) cmd_down ;;
	env) cmd_env ;;
	_node) node_main ;; # internal: the node's mount namespace
	*)
		echo "usage: local-cluster.sh up|down|env" >&2
		exit 1
		;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
