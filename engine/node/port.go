package node

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"

	clusterports "k8s.io/kubernetes/pkg/cluster/ports"
)

// The kubelets' API ports: from the kubelet's own 10250 up to Linux's
// ephemeral range (32768 on). A port is checked free and then bound by
// the kubelet a moment later, and a kubelet whose bind fails ends the
// whole process (os.Exit in its server); a port from the ephemeral range
// could be taken meanwhile by any outgoing connection, and was, about
// every other start of 100 kubelets.
const (
	firstPort = clusterports.KubeletPort
	endPort   = 32768
)

// ports are the ones this process's kubelets hold. Scanning starts at a
// random port, so that two podtraces starting at once rarely meet.
var ports = struct {
	sync.Mutex
	next  int
	taken map[int]bool
}{next: firstPort + rand.IntN(endPort-firstPort), taken: map[int]bool{}}

// reservePort returns a port free on host for a kubelet's API and keeps
// it from this process's other kubelets until releasePort.
func reservePort(host string) (int, error) {
	ports.Lock()
	defer ports.Unlock()
	for range endPort - firstPort {
		p := ports.next
		if ports.next++; ports.next == endPort {
			ports.next = firstPort
		}
		if ports.taken[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		ports.taken[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port on %s for the kubelet's API in %d-%d", host, firstPort, endPort-1)
}

// listenAddress returns where a kubelet's API server listens, and the
// function that gives the place back once it has stopped. A node with an
// IP of its own (a local address in engine/podnet's namespace) listens
// there, on the kubelet's 10250 as on any cluster: only this process's
// kubelets bind that address, and outgoing connections take ports from
// 32768 up. (A kubelet's server outlives its kubelet, so a node started
// again in this process, by a test or a restart, takes a port of its own
// there.) Otherwise it listens on 127.0.0.1 on a port of its own, where
// Dial sends kube-apiserver.
func listenAddress(nodeIP net.IP) (addr string, port int, release func(), err error) {
	if nodeIP != nil {
		addr = nodeIP.String()
		if l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(clusterports.KubeletPort))); err == nil {
			l.Close()
			return addr, clusterports.KubeletPort, func() {}, nil
		}
		if port, err = reservePort(addr); err != nil {
			return "", 0, nil, err
		}
		return addr, port, func() { releasePort(port) }, nil
	}
	if port, err = reservePort("127.0.0.1"); err != nil {
		return "", 0, nil, err
	}
	listening.Store(strconv.Itoa(port), struct{}{})
	return "127.0.0.1", port, func() {
		listening.Delete(strconv.Itoa(port))
		releasePort(port)
	}, nil
}

// releasePort gives back a port reservePort returned.
func releasePort(p int) {
	ports.Lock()
	defer ports.Unlock()
	delete(ports.taken, p)
}
