package podnet

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestForward copies a connection both ways to the address inside, half
// closes included, and stops accepting when its context ends.
func TestForward(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			go func() { // an echo server that answers once the client has sent everything
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write(append([]byte("echo: "), b...)) //nolint:errcheck
			}()
		}
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Forward(ctx, front, backend.Addr().String()); close(done) }()

	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello")) //nolint:errcheck
	c.(*net.TCPConn).CloseWrite()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(got) != "echo: hello" {
		t.Fatalf("read %q (%v) through the forward, want %q", got, err, "echo: hello")
	}

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Forward did not return when its context ended")
	}
	if c, err := net.Dial("tcp", front.Addr().String()); err == nil {
		c.Close()
		t.Error("the host listener still accepts after the context ended")
	}
}

// TestOutside: a process Reexec did not start is not inside and has no
// host listener.
func TestOutside(t *testing.T) {
	if Inside() {
		t.Skip("run inside a pod network namespace")
	}
	if ln, err := HostListener(); ln != nil || err != nil {
		t.Fatalf("HostListener() = %v, %v outside, want nil, nil", ln, err)
	}
	if err := AddRange("10.244.1.0/24"); err == nil {
		t.Fatal("AddRange outside a pod network namespace succeeded")
	}
}
