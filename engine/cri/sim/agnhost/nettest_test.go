package agnhost

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
	"github.com/podtrace/podtrace/internal/waittest"
)

// TestNettestCountsPreStopPost is the PreStop spec's exchange: the
// tester's hook posts {"Source": "prestop"} to the server's /write with
// busybox's wget, and the server's /read counts it in Received.
func TestNettestCountsPreStopPost(t *testing.T) {
	cl := newPodCluster()
	_, exited := cl.start(t, "server", "10.244.1.2", "", "agnhost", "nettest")
	server := "10.244.1.2:8080"
	cl.get(t, server, "/read") // listening
	var out, errw bytes.Buffer
	code, err := proc.Run(context.Background(), proc.Process{Programs: Programs(), Argv: []string{"wget", "-O-", `--post-data={"Source": "prestop"}`, "http://" + server + "/write"},
		FS: proc.NewFS(nil, false), Net: podAt{cl, "10.244.1.5"}, Stdout: &out, Stderr: &errw, Exec: true})
	if err != nil || code != 0 || out.String() != "{\"Hostname\":\"server\"}\n" {
		t.Fatalf("the hook's wget: exit %d, %v, stdout %q, stderr %q", code, err, out.String(), errw.String())
	}
	if got, want := cl.get(t, server, "/write"), "OK {\"Hostname\":\"server\"}\n"; got != want {
		t.Errorf("an empty /write = %q, want %q", got, want)
	}
	var state struct {
		Hostname             string
		Received             map[string]int
		Errors, Log          []string
		StillContactingPeers bool
	}
	read := func() {
		t.Helper()
		body, _ := strings.CutPrefix(cl.get(t, server, "/read"), "OK ")
		if err := json.Unmarshal([]byte(body), &state); err != nil || !strings.Contains(body, "\n\t\"Received\": {\n\t\t\"prestop\": 1\n\t},") {
			t.Fatalf("/read = %s (%v), want prestop received once, indented with tabs", body, err)
		}
	}
	read()
	if state.Hostname != "server" || strings.Join(state.Errors, "|") != "EOF|server: Got request with no source" {
		t.Errorf("/read: Hostname %q, Errors %q; want server and the empty write's two", state.Hostname, state.Errors)
	}
	// The peer search finds nobody: fail once it has given up (at once on the test's clock).
	waittest.EventuallyEvery(t, "/status to say fail", 10*time.Millisecond, time.Minute, func() (bool, string) {
		got := cl.get(t, server, "/status")
		return got == "OK fail", got
	})
	read()
	if want := "Declaring failure for default/nettest with 0 sent and 1 received and 8 peers"; len(state.Log) == 0 || state.Log[0] != want {
		t.Errorf("/read's Log = %q, want %q", state.Log, want)
	}
	cl.get(t, server, "/quit")
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("/quit: exit %d, want 0", code)
		}
	case <-time.After(time.Minute):
		t.Error("/quit did not end the process")
	}
}

// TestNettestSearchGrowsWithPeers has nettest search for --peers as long
// as upstream's contactOthers does when it finds none: /status says
// running for that long on the container's clock.
func TestNettestSearchGrowsWithPeers(t *testing.T) {
	for _, tc := range []struct {
		peers string
		want  time.Duration
	}{
		{"", 375 * time.Second}, // 8: 60 tries 5 s apart, 15 rounds
		{"50", 375 * time.Second},
		{"100", 450 * time.Second},   // 10 s apart: 30 tries, 15 rounds
		{"250", 675 * time.Second},   // 25 s apart: 12 tries, 15 rounds
		{"301", 780 * time.Second},   // 30 s apart for 301 s: 11 tries, 15 rounds
		{"1000", 2500 * time.Second}, // 100 s apart for 1000 s: 10 tries, 15 rounds
	} {
		argv := []string{"/agnhost", "nettest"}
		if tc.peers != "" {
			argv = append(argv, "--peers="+tc.peers)
		}
		slept := make(chan time.Duration, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = proc.Run(ctx, proc.Process{Programs: Programs(), Argv: argv, FS: proc.NewFS(nil, false).WithImage(agnhostImage),
				Image: agnhostImage, Hostname: "server", Net: newLoopNet(),
				Sleep: func(ctx context.Context, d time.Duration) error { slept <- d; <-ctx.Done(); return ctx.Err() }})
		}()
		select {
		case d := <-slept:
			if d != tc.want {
				t.Errorf("--peers %q: searched for %v, want %v", tc.peers, d, tc.want)
			}
		case <-time.After(time.Minute):
			t.Errorf("--peers %q: no search", tc.peers)
		}
		cancel()
		<-done
	}
}
