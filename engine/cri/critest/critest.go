// Package critest holds test helpers for engine/cri's contract: an
// Observer made of function fields, for a runtime's tests to watch what
// the runtime tells its node's CRI seam.
package critest

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
)

// Observer is a cri.Observer made of function fields; a nil field does
// what a seam with no fault or breakpoint does: the ADD runs, the DEL and
// the pods' ports go unremarked, every pod is healthy.
type Observer struct {
	Add         func(n cri.Network, add func() (ip string, err error)) (string, error)
	Del         func(sandboxID, ifName string, took time.Duration, err error)
	Ports       func(pod *runtimeapi.PodSandboxMetadata) []int32
	IsUnhealthy func(pod *runtimeapi.PodSandboxMetadata) bool
}

var _ cri.Observer = Observer{}

// NetworkAdd calls Add, else add.
func (o Observer) NetworkAdd(_ context.Context, n cri.Network, add func() (string, error)) (string, error) {
	if o.Add == nil {
		return add()
	}
	return o.Add(n, add)
}

// NetworkDel calls Del, if set.
func (o Observer) NetworkDel(sandboxID, ifName string, took time.Duration, err error) {
	if o.Del != nil {
		o.Del(sandboxID, ifName, took, err)
	}
}

// ExtraPorts calls Ports, else names none.
func (o Observer) ExtraPorts(pod *runtimeapi.PodSandboxMetadata) []int32 {
	if o.Ports == nil {
		return nil
	}
	return o.Ports(pod)
}

// Unhealthy calls IsUnhealthy, else reports every pod healthy.
func (o Observer) Unhealthy(pod *runtimeapi.PodSandboxMetadata) bool {
	return o.IsUnhealthy != nil && o.IsUnhealthy(pod)
}
