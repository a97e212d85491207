// Package upstream starts the real Kubernetes v1.36.3 components inside
// podtrace's process, as upstream's own test servers start them
// (cmd/kube-apiserver/app/testing, test/integration/framework): the
// kube-apiserver chain (aggregator → kube-apiserver → apiextensions),
// kube-controller-manager and kube-scheduler. Each component talks to the API
// server over loopback HTTPS with its own identity; podtrace's seams
// (engine/hooks/...) are installed into their configurations before they
// serve. Nothing here re-implements what the components do.
package upstream
