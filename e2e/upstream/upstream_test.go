package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// event is the part of a podtrace stage event (its JSON-lines format) the test reads.
type event struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	Stage     string    `json:"stage"`
	Status    string    `json:"status"`
	Component string    `json:"component"`
	Node      string    `json:"node"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	User      string    `json:"user"`
	Verb      string    `json:"verb"`
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("recording line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        resources:
          requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: too-big
  namespace: default
spec:
  containers:
  - name: c
    image: nginx:1.27
    resources:
      requests: {cpu: "100"}
`

// The observable stages of a Deployment's pod, in order: the API stages
// come from the audit log, the rest from objects and Events.
var podStages = []string{"authn", "authz", "admission", "persist", "reconcile", "schedule", "bind",
	"kubelet", "sandbox", "cni", "pull", "create", "start", "hooks", "ready"}

// TestUpstreamControlPlane runs kube-apiserver, kube-controller-manager and
// kube-scheduler of the pinned release with podtrace agents as the nodes,
// applies a Deployment and an unschedulable pod with kubectl, records them
// with podtrace attach, and replays the recording.
func TestUpstreamControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the upstream control plane")
	}
	b := buildBinaries(t, t.TempDir())
	c := startCluster(t, b)

	// podtrace agents are the cluster's nodes.
	agent := startProcess(t, c.dir, "podtrace-agent", b.podtrace, nil,
		"agent", "--kubeconfig", c.kubeconfig, "--nodes", "2", "--data-dir", filepath.Join(c.dir, "agent"))
	eventually(t, 90*time.Second, "nodes Ready", func() error {
		out, err := c.kubectl(t, "", "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status},{.spec.taints}{"\n"}{end}`)
		if err != nil {
			return err
		}
		if strings.Count(out, "=True,\n") != 2 {
			return fmt.Errorf("nodes not Ready and untainted yet:\n%s", out)
		}
		return nil
	})
	eventually(t, 60*time.Second, "default service account", func() error {
		_, err := c.kubectl(t, "", "get", "serviceaccount", "default", "-n", "default")
		return err
	})

	rec := filepath.Join(c.dir, "rec.jsonl")
	attach := startProcess(t, c.dir, "podtrace-attach", b.podtrace, nil,
		"attach", "--kubeconfig", c.kubeconfig, "-n", "default", "--headless", "--record", rec, "--audit-log", c.auditLog)
	time.Sleep(2 * time.Second) // informers synced

	if out, err := c.kubectl(t, manifest, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(out, "deployment.apps/web created") {
		t.Fatalf("kubectl apply: %s", out)
	}
	if _, err := c.kubectl(t, "", "rollout", "status", "deployment/web", "--timeout=120s"); err != nil {
		t.Fatal(err)
	}
	var failedScheduling string
	eventually(t, 60*time.Second, "FailedScheduling Event of too-big", func() error {
		out, err := c.kubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=too-big,reason=FailedScheduling",
			"-o", "jsonpath={.items[0].message}")
		if err != nil || out == "" {
			return fmt.Errorf("none yet (%v)", err)
		}
		failedScheduling = out
		return nil
	})
	// kube-scheduler 1.36.3's words (DynamicResources, on by default, adds its clause).
	wantMsg := "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	if failedScheduling != wantMsg {
		t.Errorf("upstream FailedScheduling text %q, want %q", failedScheduling, wantMsg)
	}
	eventually(t, 30*time.Second, "recording complete", func() error {
		evs := readEvents(t, rec)
		ready, failed := 0, false
		for _, e := range evs {
			if e.Kind == "Pod" && e.Stage == "ready" && e.Status == "succeeded" {
				ready++
			}
			if e.Pod == "too-big" && e.Stage == "schedule" && e.Reason == "FailedScheduling" {
				failed = true
			}
		}
		if ready < 3 || !failed {
			return fmt.Errorf("%d pods ready, FailedScheduling seen: %v", ready, failed)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // the last audit lines
	if err := attach.stop(); err != nil {
		t.Errorf("attach did not stop cleanly: %v", err)
	}
	evs := readEvents(t, rec)

	// Every observable stage of each web pod, in lifecycle order.
	lanes := map[string][]string{}
	for _, e := range evs {
		if e.Kind == "Pod" && strings.HasPrefix(e.Pod, "web-") && e.Status == "succeeded" {
			l := lanes[e.Pod]
			if !contains(l, e.Stage) {
				lanes[e.Pod] = append(l, e.Stage)
			}
		}
	}
	if len(lanes) != 3 {
		t.Errorf("%d web pod lanes, want 3", len(lanes))
	}
	for pod, l := range lanes {
		if strings.Join(l, " ") != strings.Join(podStages, " ") {
			t.Errorf("pod %s stages\n  %s\nwant\n  %s", pod, strings.Join(l, " "), strings.Join(podStages, " "))
		}
	}
	// The API stages name who asked: the ReplicaSet controller's service account.
	for _, e := range evs {
		if strings.HasPrefix(e.Pod, "web-") && e.Kind == "Pod" && e.Stage == "authn" && e.Verb == "create" &&
			e.User != "system:serviceaccount:kube-system:replicaset-controller" {
			t.Errorf("pod %s created by %q, want the replicaset-controller service account", e.Pod, e.User)
		}
	}
	// The unschedulable pod: the scheduler's own text in the schedule stage.
	var got string
	for _, e := range evs {
		if e.Pod == "too-big" && e.Stage == "schedule" && e.Reason == "FailedScheduling" {
			got = e.Message
			if e.Status != "retrying" || e.Component != "default-scheduler" {
				t.Errorf("FailedScheduling stage event %s by %s, want retrying by default-scheduler", e.Status, e.Component)
			}
		}
	}
	if got != failedScheduling {
		t.Errorf("schedule stage message %q, want the Event's %q", got, failedScheduling)
	}

	// podtrace replay draws the same lanes: a golden View().
	out, err := runReplay(b.podtrace, rec)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "replay-160x16", normalize(out))
	_ = agent
}

func runReplay(bin, rec string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := execCommand(bin, "replay", rec, "--snapshot", "160x16")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("podtrace replay: %v: %s", err, errOut.String())
	}
	return out.String(), nil
}

// The alphabet of generated names (k8s.io/apimachinery/pkg/util/rand.SafeEncodeString).
const safe = `[bcdfghjklmnpqrstvwxz2456789]`

var (
	podHash   = regexp.MustCompile(`web-` + safe + `{1,10}-` + safe + `{5}\b`)
	rsHash    = regexp.MustCompile(`web-` + safe + `{1,10}\b`)
	duration  = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|s|m|h)\b`)
	clockTime = regexp.MustCompile(`\b[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?\b`)
	node      = regexp.MustCompile(`\bnode-[12]\b`)
	spaces    = regexp.MustCompile(` {2,}`)
)

// normalize hides what differs between runs of a real cluster: generated
// names (and so column widths), which node a pod landed on, times of day
// and durations; what each lane shows at each stage stays.
func normalize(s string) string {
	s = podHash.ReplaceAllString(s, "web-HASH-POD")
	s = rsHash.ReplaceAllString(s, "web-HASH")
	s = node.ReplaceAllString(s, "node-N")
	s = clockTime.ReplaceAllString(s, "HH:MM:SS")
	s = duration.ReplaceAllString(s, "DUR")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, spaces.ReplaceAllString(strings.TrimRight(l, " "), "  "))
	}
	return strings.Join(lines, "\n")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("replay view differs from %s:\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
