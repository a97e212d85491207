package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// TestMain removes the podtrace binary the tests built once they have run.
// The tests that run podtrace clusters (each a process of its own, in a
// pod network namespace of its own, on a data dir of its own) run in
// parallel, as many at once as -parallel allows (one per core unless given).
func TestMain(m *testing.M) { os.Exit(podtracebin.Removing(m).Run()) }

// clusterStart bounds how long a podtrace cluster may take to start (its
// kubeconfig written, its API server ready): several start at once here.
const clusterStart = 2 * time.Minute

func run(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// TestRunHeadless runs `podtrace run --headless` on good and bad
// manifests, each run a process of its own: the runs go in parallel.
func TestRunHeadless(t *testing.T) {
	t.Parallel()
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	write := func(t *testing.T, name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("deployment reaches Ready", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := run(t, bin, "run", "-f", "../../examples/web.yaml", "--headless", "--speed", "20")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lanes := map[string][]stages.ID{}
		evs, err := tui.ReadEvents(strings.NewReader(out))
		if err != nil {
			t.Fatalf("not JSON event lines: %v", err)
		}
		for _, e := range evs {
			if e.Kind == stages.KindPod && e.Status == stages.Succeeded && (e.Verb == "" || e.Verb == "create") {
				l := lanes[e.Pod]
				if len(l) == 0 || l[len(l)-1] != e.Stage {
					lanes[e.Pod] = append(l, e.Stage)
				}
			}
		}
		if len(lanes) != 3 {
			t.Fatalf("want 3 pod lanes, got %d", len(lanes))
		}
		for pod, l := range lanes {
			if len(l) != len(stages.Lifecycle) || l[0] != stages.Authn || l[len(l)-1] != stages.Ready {
				t.Errorf("pod %s stages %v", pod, l)
			}
		}
	})

	t.Run("repeated -f and a directory apply every manifest", func(t *testing.T) {
		t.Parallel()
		pod := func(name string) string {
			return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers: [{name: c, image: nginx:1.27}]\n"
		}
		manifests := filepath.Join(dir, "manifests")
		if err := os.MkdirAll(filepath.Join(manifests, "nested"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, "manifests/c.yml", pod("from-dir-yml"))
		write(t, "manifests/d.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"from-dir-json"},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`)
		write(t, "manifests/notes.txt", "not a manifest")
		write(t, "manifests/nested/e.yaml", pod("nested-without-R"))
		out, errOut, code := run(t, bin, "run", "-f", write(t, "first.yaml", pod("from-first")), "-f", write(t, "second.yaml", pod("from-second")),
			"--headless", "--filename", manifests, "--nodes", "1", "--speed", "20")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		ready := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var e stages.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("not a JSON event line: %q: %v", line, err)
			}
			if e.Stage == stages.Ready && e.Status == stages.Succeeded {
				ready[e.Pod] = true
			}
		}
		for _, name := range []string{"from-first", "from-second", "from-dir-yml", "from-dir-json"} {
			if !ready[name] {
				t.Errorf("pod %s never Ready in the stream", name)
			}
		}
		if len(ready) != 4 || strings.Contains(out, "nested-without-R") {
			t.Errorf("ready pods %v, want the four (a subdirectory is applied only with -R)", ready)
		}
	})

	t.Run("unschedulable pod fails with the scheduler's words", func(t *testing.T) {
		t.Parallel()
		_, errOut, code := run(t, bin, "run", "-f", "../../source/live/workloads/too-big.yaml", "--headless", "--speed", "20", "--nodes", "2")
		want := "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
		if code != exitPodFailed || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})

	bad := []struct{ name, manifest, want string }{
		{"malformed yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n", "error converting YAML to JSON: yaml: line 5"},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n", "error validating data: kind not set\n"},
		{"unknown kind", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n", `no matches for kind "Widget" in version "example.com/v1"`},
		{"missing containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: empty\nspec: {}\n", `The Pod "empty" is invalid: spec.containers: Required value`},
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containerz: []\n", `strict decoding error: unknown field "spec.containerz"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := run(t, bin, "run", "-f", write(t, strings.ReplaceAll(tt.name, " ", "-")+".yaml", tt.manifest), "--headless")
			if code != 1 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q, want one line containing %q", code, errOut, tt.want)
			}
		})
	}
	t.Run("unserved kind skipped", func(t *testing.T) {
		t.Parallel()
		manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: [{name: c, image: nginx:1.27}]\n" +
			"---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"
		out, errOut, code := run(t, bin, "run", "-f", write(t, "with-widget.yaml", manifest), "--headless", "--nodes", "1")
		want := `podtrace: skipping resource mapping not found for name: "w" namespace: "" from`
		if code != 0 || !strings.HasPrefix(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(out, `"stage":"ready"`) {
			t.Fatalf("exit %d, stderr %q; want the pod Ready and one line skipping the Widget", code, errOut)
		}
	})
	t.Run("bad flag", func(t *testing.T) {
		t.Parallel()
		_, errOut, code := run(t, bin, "run", "--nodes", "zero", "-f", "x.yaml", "--headless")
		if code != 1 || !strings.HasPrefix(errOut, "podtrace: ") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}
