package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
	"github.com/podtrace/podtrace/internal/waittest"
)

// onFakeClock is a runtime whose operations take no time and whose
// programs wait on clk, with a pod of its own: it returns the runtime, the
// sandbox's ID and configuration.
func onFakeClock(t *testing.T, clk *testingclock.FakeClock) (*Runtime, string, *runtimeapi.PodSandboxConfig) {
	t.Helper()
	ctx := context.Background()
	r, err := New(Config{Node: "n1", PodCIDR: "10.244.9.0/24", Latency: &model.Latency{}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(ctx) }) //nolint:errcheck
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"},
		Hostname: "p", LogDirectory: t.TempDir()}
	id, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	return r, id, sb
}

// start creates and starts container name of image running argv (the
// image's own command when nil), with env, logging to name.log.
func start(t *testing.T, r *Runtime, sandbox string, sb *runtimeapi.PodSandboxConfig, name, image string, argv []string, env ...string) string {
	t.Helper()
	ctx := context.Background()
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: image},
		Command: argv, LogPath: name + ".log"}
	for i := 0; i+1 < len(env); i += 2 {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: env[i], Value: []byte(env[i+1])})
	}
	id, err := r.CreateContainer(ctx, sandbox, cfg, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func waitState(t *testing.T, r *Runtime, id string, want runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	t.Helper()
	var st *runtimeapi.ContainerStatus
	waittest.EventuallyEvery(t, fmt.Sprintf("container %s %s", id, want), time.Millisecond, 10*time.Second, func() (bool, string) {
		resp, err := r.ContainerStatus(context.Background(), id, false)
		st = resp.GetStatus()
		return err == nil && st.GetState() == want, fmt.Sprintf("state %s, err %v", st.GetState(), err)
	})
	return st
}

// waitTimer waits until something waits on clk: a program's sleep, a grace
// period.
func waitTimer(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	waittest.EventuallyEvery(t, "a timer on the fake clock", time.Millisecond, time.Minute, func() (bool, string) {
		return clk.HasWaiters(), ""
	})
}

// logged is what the container wrote to its log file, each line without
// its time ("stdout F hello"), "|" between them.
func logged(t *testing.T, sb *runtimeapi.PodSandboxConfig, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sb.GetLogDirectory(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if _, rest, ok := strings.Cut(l, " "); ok {
			lines = append(lines, rest)
		}
	}
	return strings.Join(lines, "|")
}

func TestContainerProgram(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, sandbox, sb := onFakeClock(t, clk)
	ctx := context.Background()
	id := start(t, r, sandbox, sb, "c", "docker.io/library/busybox:latest", []string{"sh", "-c", "touch /tmp/healthy; echo hello; sleep 5; exit 3"})
	waitState(t, r, id, runtimeapi.ContainerState_CONTAINER_RUNNING)
	// The program runs touch and echo before sleeping: wait for the timer.
	waitTimer(t, clk)
	if out, _, err := r.ExecSync(ctx, id, []string{"cat", "/tmp/healthy"}, time.Second); err != nil {
		t.Fatalf("cat /tmp/healthy: %q %v", out, err)
	}
	_, stderr, err := r.ExecSync(ctx, id, []string{"sh", "-c", "cat /tmp/missing"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited with 1") || !strings.Contains(string(stderr), "can't open '/tmp/missing'") {
		t.Fatalf("cat missing: %q %v", stderr, err)
	}
	clk.Step(5 * time.Second)
	st := waitState(t, r, id, runtimeapi.ContainerState_CONTAINER_EXITED)
	if st.GetExitCode() != 3 || st.GetReason() != "Error" || time.Duration(st.GetFinishedAt()-st.GetStartedAt()) != 5*time.Second {
		t.Fatalf("exit: %v", st)
	}
	if got := logged(t, sb, "c"); got != "stdout F hello" {
		t.Fatalf("logs %q", got)
	}
	if _, _, err := r.ExecSync(ctx, id, []string{"true"}, time.Second); err == nil || !strings.Contains(err.Error(), "container is in CONTAINER_EXITED state") {
		t.Errorf("exec in an exited container: %v", err)
	}
}

// TestContainerCommands runs commands as containers' processes: their
// exit status and reason, when they exit on the runtime's clock, and what
// they log.
func TestContainerCommands(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, sandbox, sb := onFakeClock(t, clk)
	for i, tc := range []struct {
		argv   []string
		env    []string
		code   int32
		reason string
		d      time.Duration
		logs   string
	}{
		{argv: []string{"sh", "-c", "exit 1"}, code: 1, reason: "Error"},
		{argv: []string{"false"}, code: 1, reason: "Error"},
		{argv: []string{"true"}, reason: "Completed"},
		{argv: []string{"/bin/sh", "-c", "echo $MODE; sleep 10; exit 2"}, env: []string{"MODE", "debug"}, code: 2, reason: "Error", d: 10 * time.Second, logs: "stdout F debug"},
		{argv: []string{"sh", "-c", "for i in 1 2; do echo tick $i; sleep 1; done"}, reason: "Completed", d: 2 * time.Second, logs: "stdout F tick 1|stdout F tick 2"},
		{argv: []string{"sh", "-c", "echo oops >&2; printf part"}, code: 0, reason: "Completed", logs: "stderr F oops|stdout P part"},
	} {
		name := fmt.Sprint("c", i)
		id := start(t, r, sandbox, sb, name, "docker.io/library/busybox:latest", tc.argv, tc.env...)
		for elapsed := time.Duration(0); elapsed < tc.d; elapsed += time.Second {
			waitTimer(t, clk)
			clk.Step(time.Second)
		}
		st := waitState(t, r, id, runtimeapi.ContainerState_CONTAINER_EXITED)
		if d := time.Duration(st.GetFinishedAt() - st.GetStartedAt()); st.GetExitCode() != tc.code || st.GetReason() != tc.reason || d != tc.d {
			t.Errorf("%q: exit %d (%s) after %s, want %d (%s) after %s", tc.argv, st.GetExitCode(), st.GetReason(), d, tc.code, tc.reason, tc.d)
		}
		if got := logged(t, sb, name); got != tc.logs {
			t.Errorf("%q: logs %q, want %q", tc.argv, got, tc.logs)
		}
	}
}

func TestStopContainer(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	r, sandbox, sb := onFakeClock(t, clk)
	ctx := context.Background()
	srv := start(t, r, sandbox, sb, "web", "docker.io/library/nginx:1.27", nil)
	sh := start(t, r, sandbox, sb, "sh", "busybox", []string{"sleep", "3600"})
	if err := r.StopContainer(ctx, srv, 30); err != nil {
		t.Fatal(err)
	}
	if st := waitState(t, r, srv, runtimeapi.ContainerState_CONTAINER_EXITED); st.GetExitCode() != 0 || st.GetReason() != "Completed" {
		t.Fatalf("nginx exit %d (%s), want 0 (Completed)", st.GetExitCode(), st.GetReason())
	}
	done := make(chan error)
	go func() { done <- r.StopContainer(ctx, sh, 30) }()
	for i := 0; i < 2; i++ { // the sleep program's timer and the grace timer
		waitTimer(t, clk)
		time.Sleep(5 * time.Millisecond)
	}
	clk.Step(30 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := waitState(t, r, sh, runtimeapi.ContainerState_CONTAINER_EXITED); st.GetExitCode() != 137 {
		t.Fatalf("sleep exit %d, want 137", st.GetExitCode())
	}
	if err := r.StartContainer(ctx, sh); err == nil || !regexp.MustCompile(`is in CONTAINER_EXITED state, not CONTAINER_CREATED`).MatchString(err.Error()) {
		t.Errorf("starting an exited container: %v", err)
	}
}

// A container with a terminal or an input that is removed without having
// started closes them: a start that keeps failing (a start fault, the
// kubelet creating the container again each time) leaks no descriptors.
func TestRemoveNeverStartedClosesItsInput(t *testing.T) {
	ctx := context.Background()
	r, sandbox, sb := onFakeClock(t, testingclock.NewFakeClock(time.Now()))
	for _, tc := range []struct {
		name       string
		tty, stdin bool
		removePod  bool
	}{
		{name: "tty", tty: true},
		{name: "stdin", stdin: true},
		{name: "pod", tty: true, removePod: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: tc.name}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
				Command: []string{"sh"}, Tty: tc.tty, Stdin: tc.stdin, LogPath: tc.name + ".log"}
			id, err := r.CreateContainer(ctx, sandbox, cfg, sb)
			if err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			s := r.containers[id].proc.stdio
			r.mu.Unlock()
			if s.in == nil {
				t.Fatal("the container has no input to close")
			}
			if tc.removePod {
				err = r.RemovePodSandbox(ctx, sandbox)
			} else {
				err = r.RemoveContainer(ctx, id)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []*os.File{s.in, s.feed} {
				if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
					t.Errorf("%s: after removal, a write to its input gives %v, want %v", tc.name, err, os.ErrClosed)
				}
			}
		})
	}
}
