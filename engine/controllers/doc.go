// Package controllers holds podtrace's workload controllers. The Deployment
// controller (subpackage deployment) turns Deployments into ReplicaSets and
// the ReplicaSet controller (subpackage replicaset) turns ReplicaSets into
// Pods, both following kube-controller-manager 1.36 in behaviour and wording;
// controllerutil holds what they share.
package controllers
