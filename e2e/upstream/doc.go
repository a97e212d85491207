// Package upstream is a test-only module: it builds kube-apiserver,
// kube-scheduler, kube-controller-manager and kubectl from the pinned
// k8s.io/kubernetes release and runs them against podtrace's node agents.
// It is never a dependency of podtrace itself.
package upstream
