// Package controllerutil holds what podtrace's workload controllers share,
// ported from kube-controller-manager 1.36 (pkg/controller/controller_utils.go):
// expectations, pod activity and readiness, the victim ranking used when
// scaling down, the pod-template hash, ReplicaSet orderings, the event
// recorder and the errors injected faults turn into.
package controllerutil
