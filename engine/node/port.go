package node

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The kubelets' API ports: from the kubelet's own 10250 up to Linux's
// ephemeral range (32768 on). A port is checked free and then bound by
// the kubelet a moment later, and a kubelet whose bind fails ends the
// whole process (os.Exit in its server); a port from the ephemeral range
// could be taken meanwhile by any outgoing connection, and was, about
// every other start of 100 kubelets.
const (
	firstPort = 10250
	endPort   = 32768
)

// ports are the ones this process's kubelets hold. Scanning starts at a
// random port, so that two podtraces starting at once rarely meet.
var ports = struct {
	sync.Mutex
	next  int
	taken map[int]bool
}{next: firstPort + rand.IntN(endPort-firstPort), taken: map[int]bool{}}

// reservePort returns a port free on 127.0.0.1 for a kubelet's API and
// keeps it from this process's other kubelets until releasePort.
func reservePort() (int, error) {
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
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		ports.taken[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 for the kubelet's API in %d-%d", firstPort, endPort-1)
}

// releasePort gives back a port reservePort returned.
func releasePort(p int) {
	ports.Lock()
	defer ports.Unlock()
	delete(ports.taken, p)
}
