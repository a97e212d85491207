package tuie2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// loadWorkload is a Deployment of n small pods without probes, so that a pod
// is Ready as soon as its container started.
func loadWorkload(n int) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: load
spec:
  replicas: ` + strconv.Itoa(n) + `
  selector:
    matchLabels: {app: load}
  template:
    metadata:
      labels: {app: load}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources:
          requests: {cpu: 10m, memory: 16Mi}
`
}

// runStats is what a recorded run says about its throughput.
type runStats struct {
	ready int           // pods that reached Ready
	span  time.Duration // engine time from the Deployment's create to the last pod Ready
}

// podsPerSecond is the throughput in pods per wall-clock second at speed.
func (r runStats) podsPerSecond(speed float64) float64 {
	if r.span <= 0 {
		return 0
	}
	return float64(r.ready) / (r.span.Seconds() / speed)
}

// readyTracker folds JSON-lines stage events into runStats.
type readyTracker struct {
	first, last time.Time
	ready       map[string]bool
}

func (t *readyTracker) add(line []byte) {
	var e stages.Event
	if json.Unmarshal(line, &e) != nil {
		return
	}
	if e.Kind == stages.KindDeployment && (t.first.IsZero() || e.Time.Before(t.first)) {
		t.first = e.Time
	}
	if e.Kind == stages.KindPod && e.Stage == stages.Ready && e.Status == stages.Succeeded && !t.ready[e.Key()] {
		t.ready[e.Key()] = true
		if e.Time.After(t.last) {
			t.last = e.Time
		}
	}
}

func (t *readyTracker) stats() runStats {
	return runStats{ready: len(t.ready), span: t.last.Sub(t.first)}
}

func trackLines(data []byte) *readyTracker {
	t := &readyTracker{ready: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		t.add(sc.Bytes())
	}
	return t
}

// throughputRun is the shared setup of one comparison.
type throughputRun struct {
	bin, manifest   string
	pods, nodes     int
	speed           float64
	headlessTimeout time.Duration
}

// headless runs the workload with `run --headless` and reads its JSON lines.
func (r throughputRun) headless(b *testing.B) runStats {
	out, err := exec.Command(r.bin, "run", "-f", r.manifest, "--headless", "--nodes", strconv.Itoa(r.nodes),
		"--speed", fmt.Sprint(r.speed), "--timeout", r.headlessTimeout.String()).Output()
	if err != nil {
		b.Fatalf("headless run: %v", err)
	}
	return trackLines(out).stats()
}

// withUI runs the same workload with the UI attached to a tmux pty at
// 120×40, recording the same events, and quits once every pod is Ready.
func (r throughputRun) withUI(b *testing.B) runStats {
	rec := filepath.Join(b.TempDir(), "events.jsonl")
	tm := startTerm(b, 120, 40, "env", recordEnv+"="+rec, r.bin, "-f", r.manifest, "--nodes", strconv.Itoa(r.nodes),
		"--speed", fmt.Sprint(r.speed))
	deadline := time.Now().Add(r.headlessTimeout)
	for {
		data, _ := os.ReadFile(rec)
		if st := trackLines(data).stats(); st.ready >= r.pods {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("pods not Ready with the UI after %s; screen:\n%s", r.headlessTimeout, tm.screen())
		}
		time.Sleep(250 * time.Millisecond)
	}
	tm.keys("q")
	tm.waitFor("podtrace to exit", time.Minute, has("podtrace exited 0"))
	data, err := os.ReadFile(rec)
	if err != nil {
		b.Fatal(err)
	}
	return trackLines(data).stats()
}

// recordEnv is cmd/podtrace's variable naming a file for the UI's events.
const recordEnv = "PODTRACE_RECORD"

// BenchmarkThroughputUIvsHeadless runs the same workload (a Deployment of
// 200, then 1,000 pods on 20 nodes at 50× clock speed) headless and with
// the UI attached through a pty (tmux), one after the other, and reports
// pods Ready per wall second for each and the median over runs of the UI
// run's percentage of the headless one (the goal is ≥ 95%). Throughput is
// taken from the engine's own event times (the Deployment's create to the
// last pod Ready), so polling and start-up do not count.
//
//	go test ./e2e/tui -run '^$' -bench ThroughputUIvsHeadless -benchtime 3x
func BenchmarkThroughputUIvsHeadless(b *testing.B) {
	needTmux(b)
	bin := binary(b)
	for _, pods := range []int{200, 1000} {
		b.Run(fmt.Sprintf("%dpods-20nodes", pods), func(b *testing.B) {
			r := throughputRun{bin: bin, pods: pods, nodes: 20, speed: 50, headlessTimeout: 5 * time.Minute}
			r.manifest = filepath.Join(b.TempDir(), "load.yaml")
			if err := os.WriteFile(r.manifest, []byte(loadWorkload(r.pods)), 0o644); err != nil {
				b.Fatal(err)
			}
			var headless, ui float64
			var ratios []float64
			for i := 0; i < b.N; i++ {
				h := r.headless(b)
				u := r.withUI(b)
				if h.ready < r.pods || u.ready < r.pods {
					b.Fatalf("pods Ready: headless %d, UI %d, want %d", h.ready, u.ready, r.pods)
				}
				hp, up := h.podsPerSecond(r.speed), u.podsPerSecond(r.speed)
				b.Logf("run %d: headless %.1f pods/s (%s engine time), UI %.1f pods/s (%s), UI/headless %.1f%%",
					i+1, hp, h.span.Round(time.Millisecond), up, u.span.Round(time.Millisecond), 100*up/hp)
				headless += hp
				ui += up
				ratios = append(ratios, 100*up/hp)
			}
			sort.Float64s(ratios)
			b.ReportMetric(headless/float64(b.N), "headless-pods/s")
			b.ReportMetric(ui/float64(b.N), "ui-pods/s")
			b.ReportMetric(ratios[len(ratios)/2], "median-ui/headless-%")
		})
	}
}
