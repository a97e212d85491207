package agnhost

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestConnSetClosesWhatIsOpen: closing a raw service's connections ends the
// ones still open (as the process's end does), a connection that arrives
// after is closed at once, and one whose handler returned is closed and
// forgotten.
func TestConnSetClosesWhatIsOpen(t *testing.T) {
	cs := &connSet{open: map[net.Conn]struct{}{}}
	pipe := func() (server, client net.Conn) {
		server, client = net.Pipe()
		t.Cleanup(func() { server.Close(); client.Close() })
		return server, client
	}
	// closed reports whether the server's end of client's pipe is closed
	// (an open one has nothing to read: the deadline ends the wait).
	closed := func(client net.Conn) bool {
		_ = client.SetReadDeadline(time.Now().Add(time.Second))
		_, err := client.Read(make([]byte, 1))
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
	}

	handled, handledClient := pipe()
	if !cs.add(handled) {
		t.Fatal("add before Close said false")
	}
	cs.done(handled)
	if !closed(handledClient) || len(cs.open) != 0 {
		t.Fatalf("after done: closed %v, %d still tracked", closed(handledClient), len(cs.open))
	}

	first, firstClient := pipe()
	second, secondClient := pipe()
	cs.add(first)
	cs.add(second)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(firstClient) || !closed(secondClient) {
		t.Error("Close left a connection open")
	}

	late, lateClient := pipe()
	if cs.add(late) {
		t.Error("add after Close said true")
	}
	if !closed(lateClient) {
		t.Error("a connection added after Close stayed open")
	}
}
