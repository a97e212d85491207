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
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
	"github.com/podtrace/podtrace/internal/waittest"
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
	span  time.Duration // from the Deployment's create to the last pod Ready, in event times (real time)
	cpu   time.Duration // CPU time spent from the process start to the last pod Ready
}

// podsPerSecond is the throughput in pods per second.
func (r runStats) podsPerSecond() float64 {
	if r.span <= 0 {
		return 0
	}
	return float64(r.ready) / r.span.Seconds()
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

// headless runs the workload with `run --headless` and reads its JSON lines;
// cpu is the process's CPU time from its start to the last pod Ready.
func (r throughputRun) headless(b *testing.B) runStats {
	outPath := filepath.Join(b.TempDir(), "headless.jsonl")
	out, err := os.Create(outPath)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(r.bin, "run", "-f", r.manifest, "--headless", "--nodes", strconv.Itoa(r.nodes),
		"--speed", fmt.Sprint(r.speed), "--timeout", r.headlessTimeout.String())
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	cpu := waitReady(b, outPath, r.pods, r.headlessTimeout, func() time.Duration { return cpuTime(cmd.Process.Pid) }, nil)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("headless run: %v", err)
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		b.Fatal(err)
	}
	st := trackLines(data).stats()
	st.cpu = cpu
	return st
}

// withUI runs the same workload with the UI attached to a tmux pty at
// 120×40, recording the same events, and quits once every pod is Ready; cpu
// adds what the tmux server spent drawing to what podtrace spent.
func (r throughputRun) withUI(b *testing.B) runStats {
	rec := filepath.Join(b.TempDir(), "events.jsonl")
	tm := startTerm(b, 120, 40, "env", recordEnv+"="+rec, r.bin, "-f", r.manifest, "--nodes", strconv.Itoa(r.nodes),
		"--speed", fmt.Sprint(r.speed))
	server, _ := strconv.Atoi(strings.TrimSpace(tm.Tmux("display", "-p", "#{pid}")))
	pane, _ := strconv.Atoi(strings.TrimSpace(tm.Tmux("display", "-p", "-t", tm.Session, "#{pane_pid}")))
	serverStart := cpuTime(server)
	pid := 0
	cpu := waitReady(b, rec, r.pods, r.headlessTimeout, func() time.Duration {
		if pid == 0 {
			pid = childOf(pane)
		}
		return cpuTime(pid) + cpuTime(server) - serverStart
	}, tm)
	tm.Keys("q")
	tm.WaitFor("podtrace to exit", time.Minute, tmuxtest.Has("podtrace exited 0"))
	data, err := os.ReadFile(rec)
	if err != nil {
		b.Fatal(err)
	}
	st := trackLines(data).stats()
	st.cpu = cpu
	return st
}

// waitReady polls the JSON-lines file until pods are Ready and returns cpu()
// read right then.
func waitReady(b *testing.B, path string, pods int, timeout time.Duration, cpu func() time.Duration, tm *term) time.Duration {
	var used time.Duration
	waittest.Eventually(b, fmt.Sprintf("%d pods Ready", pods), timeout, func() (bool, string) {
		data, _ := os.ReadFile(path)
		st := trackLines(data).stats()
		used = cpu() // each time: the reading when Ready was seen is the last
		screen := ""
		if tm != nil && st.ready < pods {
			screen = tm.Screen()
		}
		return st.ready >= pods, fmt.Sprintf("%d Ready\n%s", st.ready, screen)
	})
	return used
}

// cpuTime is the user and system CPU time of process pid (0 when unknown).
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): state is 3rd, utime 14th, stime 15th.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.Atoi(f[11])
	stt, _ := strconv.Atoi(f[12])
	return time.Duration(ut+stt) * time.Second / 100 // USER_HZ
}

// childOf returns the first child process of pid (0 when none yet).
func childOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	c, _ := strconv.Atoi(f[0])
	return c
}

// recordEnv is cmd/podtrace's variable naming a file for the UI's events.
const recordEnv = "PODTRACE_RECORD"

// BenchmarkThroughputUIvsHeadless runs the same workload (a Deployment of
// 200, then 1,000 pods on 20 nodes, the simulated runtime at 50× speed) headless and with
// the UI attached through a pty (tmux), one after the other, and reports
// pods Ready per wall second for each and the median over runs of the UI
// run's percentage of the headless one (the goal is ≥ 95%). Throughput is
// taken from the engine's own event times (the Deployment's create to the
// last pod Ready), so polling and start-up do not count.
//
//	go test ./e2e/tui -run '^$' -bench ThroughputUIvsHeadless -benchtime 3x
func BenchmarkThroughputUIvsHeadless(b *testing.B) {
	tmuxtest.Need(b)
	bin := podtracebin.Path(b)
	for _, pods := range []int{200, 1000} {
		b.Run(fmt.Sprintf("%dpods-20nodes", pods), func(b *testing.B) {
			r := throughputRun{bin: bin, pods: pods, nodes: 20, speed: 50, headlessTimeout: 5 * time.Minute}
			r.manifest = filepath.Join(b.TempDir(), "load.yaml")
			if err := os.WriteFile(r.manifest, []byte(loadWorkload(r.pods)), 0o644); err != nil {
				b.Fatal(err)
			}
			var headless, ui float64
			var ratios, cpuRatios []float64
			for i := 0; i < b.N; i++ {
				h := r.headless(b)
				u := r.withUI(b)
				if h.ready < r.pods || u.ready < r.pods {
					b.Fatalf("pods Ready: headless %d, UI %d, want %d", h.ready, u.ready, r.pods)
				}
				hp, up := h.podsPerSecond(), u.podsPerSecond()
				b.Logf("run %d: headless %.1f pods/s (%s, %s CPU), UI %.1f pods/s (%s, %s CPU with tmux), UI/headless %.1f%%, CPU headless/UI %.1f%%",
					i+1, hp, h.span.Round(time.Millisecond), h.cpu, up, u.span.Round(time.Millisecond), u.cpu, 100*up/hp,
					100*h.cpu.Seconds()/u.cpu.Seconds())
				headless += hp
				ui += up
				ratios = append(ratios, 100*up/hp)
				cpuRatios = append(cpuRatios, 100*h.cpu.Seconds()/u.cpu.Seconds())
			}
			sort.Float64s(ratios)
			sort.Float64s(cpuRatios)
			b.ReportMetric(headless/float64(b.N), "headless-pods/s")
			b.ReportMetric(ui/float64(b.N), "ui-pods/s")
			b.ReportMetric(ratios[len(ratios)/2], "median-ui/headless-%")
			// Headless CPU over UI CPU for the same pods: the throughput the UI
			// leaves when the CPU is the limit, whatever else runs on the machine.
			b.ReportMetric(cpuRatios[len(cpuRatios)/2], "median-cpu-headless/ui-%")
		})
	}
}
