package main

import (
	"fmt"
	"net"
	"testing"

	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/cri/runtimes"
	"github.com/podtrace/podtrace/engine/podnet"
)

// podnetSkipped says why a cluster that wanted a pod network namespace
// runs without one; it is logged once the log file is open.
var podnetSkipped error

// enterPodNetwork runs this command again inside a pod network namespace
// (engine/podnet) when the cluster it is about to start wants one: the
// simulated runtime, with the embedded etcd
// (an external one on the host's loopback could not be reached from
// inside). ran reports that the child ran; its exit code is then this
// command's. Call it before reading stdin or drawing anything. A test
// binary running a command in process is not run again.
func (c *clusterFlags) enterPodNetwork() (ran bool, err error) {
	if podnet.Inside() {
		return false, forwardOTLPInside()
	}
	if rt, ok := runtimes.Lookup(c.runtime); testing.Testing() || !ok || rt.Real || c.etcdEndpoints != "" {
		return false, nil
	}
	stopOTLP, err := forwardOTLPFromHost()
	if err != nil {
		return true, err // the command stops here with the environment's error
	}
	defer stopOTLP()
	code, err := podnet.Reexec("127.0.0.1:0")
	if err != nil {
		podnetSkipped = err
		return false, nil
	}
	if code != 0 {
		return true, &exitError{code: code}
	}
	return true, nil
}

// podnetListeners prepares the pod network namespace this process runs
// in, if any, and returns the listener the parent bound on the host for the
// API server and the API server's own listener inside, at the same address
// (both nil when there is none). It binds the inner one at once: later,
// etcd's clients take ephemeral ports here, the host's port among them
// perhaps. Call it once the log is open.
func podnetListeners() (host, inside net.Listener, err error) {
	if podnetSkipped != nil {
		klog.InfoS("Running without a pod network namespace: simulated pods answer on loopback addresses, which EndpointSlices refuse", "err", podnetSkipped)
	}
	if !podnet.Inside() {
		return nil, nil, nil
	}
	if err := podnet.Setup(); err != nil {
		return nil, nil, err
	}
	if host, err = podnet.HostListener(); err != nil || host == nil {
		return nil, nil, err
	}
	if inside, err = net.Listen("tcp", host.Addr().String()); err != nil {
		return nil, nil, fmt.Errorf("pod network namespace: the API server's address: %w", err)
	}
	return host, inside, nil
}
