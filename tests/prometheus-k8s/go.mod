// A Prometheus with Kubernetes service discovery, for tests/kubernetes.rs:
// Debian's prometheus package is built without it. .ci/run builds it with
//   go build -tags remove_all_sd,enable_kubernetes_sd github.com/prometheus/prometheus/cmd/prometheus
// (the build tags leave out every other discovery: a third of the build).
module pace.local/prometheus-k8s

go 1.26.7

require github.com/prometheus/prometheus v0.316.0
