// Package controllerutil holds what podtrace's workload controllers share,
// ported from kube-controller-manager 1.36 (pkg/controller/controller_utils.go):
// the work queue and its workers (Queue: informers, cache sync, rate-limited
// retries reported as retrying reconcile stage events), enqueue helpers,
// claiming dependents (Claimer, ClaimAll), expectations, pod activity and
// readiness, the victim ranking used when scaling down, the pod-template
// hash, ReplicaSet orderings, the event recorder and the errors injected
// faults turn into.
package controllerutil
