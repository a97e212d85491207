package agnhost

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
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
	for deadline := time.Now().Add(time.Minute); cl.get(t, server, "/status") != "OK fail"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("/status never said fail")
		}
	}
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
