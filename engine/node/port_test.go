package node

import (
	"net"
	"strconv"
	"testing"
)

// TestReservePort reserves ports for three kubelets: each is distinct,
// below the ephemeral range, and free; a port another listener holds is
// passed over, and a released one can be handed out again.
func TestReservePort(t *testing.T) {
	first, err := reservePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	// Someone else listens on the next port the scan would try.
	ports.Lock()
	busy := ports.next
	ports.Unlock()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(busy)))
	if err == nil {
		defer l.Close()
	}
	second, err := reservePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	third, err := reservePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{first, second, third} {
		if p < firstPort || p >= endPort {
			t.Errorf("port %d outside %d-%d", p, firstPort, endPort-1)
		}
	}
	if first == second || second == third || first == third {
		t.Errorf("ports %d, %d, %d are not distinct", first, second, third)
	}
	if l != nil && (second == busy || third == busy) {
		t.Errorf("port %d handed out while another listener holds it", busy)
	}
	releasePort(first)
	ports.Lock()
	ports.next = first
	ports.Unlock()
	if again, err := reservePort("127.0.0.1"); err != nil || again != first {
		t.Errorf("after release: reservePort = %d, %v; want %d again", again, err, first)
	}
}
