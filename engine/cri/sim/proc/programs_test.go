package proc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A Program runs as the process the shell starts: with its whole
// command line, the shell's exported variables, streams and directory,
// and its exit status is the command's. It runs only in an image that
// has it; elsewhere its name is an unknown command's.
func TestPrograms(t *testing.T) {
	echo := func(_ context.Context, p Process) (int, error) {
		fmt.Fprintf(p.Stdout, "%q in %s, A=%s B=%s\n", p.Argv, p.Dir, p.Getenv("A"), p.Getenv("B"))
		fmt.Fprintf(p.Stderr, "abs: %s\n", p.Abs("f"))
		return len(p.Argv), nil
	}
	programs := Programs{"agnhost": echo, "agnhost-2": echo}
	for _, tc := range []struct {
		image          string
		argv           []string
		code           int
		stdout, stderr string
	}{
		{agnhostImage, []string{"/agnhost", "pause"}, 2, "[\"/agnhost\" \"pause\"] in /, A=1 B=\n", "abs: /f\n"},
		{agnhostImage, []string{"sh", "-c", "export B=2; C=3; cd /tmp && agnhost-2 x y; echo $?"}, 0,
			"[\"agnhost-2\" \"x\" \"y\"] in /tmp, A=1 B=2\n3\n", "abs: /tmp/f\n"},
		{agnhostImage, []string{"sh", "-c", "agnhost x | cat"}, 0, "[\"agnhost\" \"x\"] in /, A=1 B=\n", "abs: /f\n"},
		{"docker.io/library/busybox:1.36", []string{"/agnhost", "pause"}, 0, "", ""}, // unknown: under exec it succeeds
	} {
		var out, errw bytes.Buffer
		code, err := Run(context.Background(), Process{Argv: tc.argv, Env: []string{"A=1"}, FS: NewFS(nil, false),
			Stdout: &out, Stderr: &errw, Exec: true, Image: tc.image, Programs: programs})
		if err != nil || code != tc.code || out.String() != tc.stdout || errw.String() != tc.stderr {
			t.Errorf("%q in %s: exit %d (%v), stdout %q, stderr %q; want %d, %q, %q",
				tc.argv, tc.image, code, err, out.String(), errw.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// A program's process serves until stopped when it is the container's
// (Unknown), and ends with the shell's context.
func TestProgramUntilStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	serve := func(ctx context.Context, p Process) (int, error) { return p.Unknown(ctx) }
	_, err := Run(ctx, Process{Argv: []string{"sh", "-c", "agnhost serve; echo never"}, FS: NewFS(nil, false),
		Image: agnhostImage, Programs: Programs{"agnhost": serve}})
	if err != context.DeadlineExceeded {
		t.Fatalf("Run: %v, want it to serve until stopped", err)
	}
}

// dialNet is a Network whose Dialer records where the container dials.
type dialNet struct{ dialed *[]string }

func (dialNet) Listen(int) ([]net.Listener, error)         { return nil, nil }
func (dialNet) ListenPacket(int) ([]net.PacketConn, error) { return nil, nil }
func (n dialNet) Dial(_ context.Context, network, addr string, _ time.Duration) (net.Conn, error) {
	*n.dialed = append(*n.dialed, network+" "+addr)
	return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("refused")}
}

// A container whose Network is a Dialer makes its connections through
// it, busybox's applets' as well as a program's.
func TestDialThroughTheNetwork(t *testing.T) {
	var dialed []string
	p := Process{Argv: []string{"sh", "-c", "nc -w 1 10.0.0.5 80 </dev/null"}, FS: NewFS(nil, false), Exec: true, Net: dialNet{&dialed}}
	if code, _ := Run(context.Background(), p); code == 0 {
		t.Error("nc to a refused port succeeded")
	}
	_, _ = p.Dial(context.Background(), "udp", "10.0.0.6:53", time.Second)
	if want := []string{"tcp 10.0.0.5:80", "udp 10.0.0.6:53"}; strings.Join(dialed, ",") != strings.Join(want, ",") {
		t.Errorf("dialed %q, want %q", dialed, want)
	}
}
