package model

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podtrace/podtrace/internal/waittest"
)

func TestLatencyDeterministic(t *testing.T) {
	a := model{Latency: DefaultLatency, seed: 42}
	b := model{Latency: DefaultLatency, seed: 42}
	c := model{Latency: DefaultLatency, seed: 43}
	for _, key := range []string{"sandbox/default/web-1/0", "create/default/web-1/app/0", "start/x"} {
		if a.scale(time.Second, key) != b.scale(time.Second, key) {
			t.Fatalf("same seed, different duration for %s", key)
		}
	}
	if a.scale(time.Second, "k") == c.scale(time.Second, "k") {
		t.Fatal("different seeds gave the same duration")
	}
	d := a.scale(400*time.Millisecond, "sandbox/x")
	if d < 360*time.Millisecond || d > 440*time.Millisecond {
		t.Fatalf("sandbox latency %v outside ±10%%", d)
	}
	z := model{}
	if z.pull(72_955_450, "p") != 0 || z.scale(z.Sandbox, "s") != 0 {
		t.Fatal("zero latency is not zero")
	}
	// nginx at 25 MB/s after 0.3 s: about 3.2 s.
	if p := a.pull(72_955_450, "pull/nginx"); p < 2800*time.Millisecond || p > 3600*time.Millisecond {
		t.Fatalf("nginx pull %v", p)
	}
}

// TestLatencySpeed changes the speed between two waits: each takes the
// speed of the moment, as the + and - keys change it while pods start.
func TestLatencySpeed(t *testing.T) {
	speed := 4.0
	lat := DefaultLatency
	lat.Jitter = 0
	m := model{Latency: lat, speed: func() float64 { return speed }}
	if d := m.scale(time.Second, "k"); d != 250*time.Millisecond {
		t.Fatalf("at speed 4: %v, want 250ms", d)
	}
	speed = 0.5
	if d := m.scale(time.Second, "k"); d != 2*time.Second {
		t.Fatalf("at speed 0.5: %v, want 2s", d)
	}
	// nginx at 25 MB/s after 0.3 s (about 3.2 s) is twice as long at half speed.
	if p := m.pull(72_955_450, "pull/nginx"); p < 5600*time.Millisecond || p > 7200*time.Millisecond {
		t.Fatalf("nginx pull at speed 0.5: %v", p)
	}
}

func TestPullErrors(t *testing.T) {
	zero := Latency{}
	r := New(Config{Clock: testingclock.NewFakeClock(time.Now()), Latency: &zero})
	ctx := context.Background()
	tests := []struct {
		image, want string
		auth        *AuthConfig
	}{
		{image: "nginx:1.27"},
		{image: "ghcr.io/acme/shop:v3"},
		{image: "nginx:no_such", want: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:no_such": failed to resolve reference "docker.io/library/nginx:no_such": docker.io/library/nginx:no_such: not found`},
		// A version nginx never published (the README's failed-pull example).
		{image: "nginx:1.277", want: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.277": failed to resolve reference "docker.io/library/nginx:1.277": docker.io/library/nginx:1.277: not found`},
		{image: "busybox"},
		{image: "nginx:1.277@sha256:" + strings.Repeat("ab", 32)},
		{image: "registry.k8s.io/pause:3.10.2"},
		{image: "registry.k8s.io/pause:3.11.7", want: "registry.k8s.io/pause:3.11.7: not found"},
		{image: "nginxx", want: "pull access denied, repository does not exist or may require authorization"},
		{image: "registry.example.com/app:1", want: `failed to do request: Head "https://registry.example.com/v2/app/manifests/1": dial tcp: lookup registry.example.com: no such host`},
		{image: "quay.io/acme/private-api:1", want: "no basic auth credentials"},
		{image: "quay.io/acme/private-api:1", auth: &AuthConfig{Username: "u", Password: "p"}},
	}
	for _, tt := range tests {
		img, err := r.PullImage(ctx, tt.image, tt.auth)
		if tt.want == "" {
			if err != nil || img.Size == 0 || !strings.HasPrefix(img.ID, "sha256:") {
				t.Errorf("pull %s: %+v %v", tt.image, img, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("pull %s: got %v, want %q", tt.image, err, tt.want)
		}
	}
	cached := map[string]int64{}
	for _, img := range r.Images() {
		cached[img.Ref] = img.Size
	}
	if cached["docker.io/library/nginx:1.27"] != 72_955_450 {
		t.Fatalf("nginx not cached: %v", cached)
	}
	if _, ok := cached["docker.io/library/redis:latest"]; ok {
		t.Fatal("redis cached without a pull")
	}
}

func waitState(t *testing.T, r *Runtime, id string, want State) ContainerStatus {
	t.Helper()
	var st ContainerStatus
	waittest.EventuallyEvery(t, fmt.Sprintf("container %s %s", id, want), time.Millisecond, 10*time.Second, func() (bool, string) {
		var err error
		st, err = r.ContainerStatus(context.Background(), id)
		return err == nil && st.State == want, fmt.Sprintf("state %s, err %v", st.State, err)
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

// logged collects the lines each container writes, by container ID.
type logged struct {
	mu    sync.Mutex
	lines map[string][]string
}

func (l *logged) add(id string, line LogLine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines == nil {
		l.lines = map[string][]string{}
	}
	l.lines[id] = append(l.lines[id], line.Text)
}

func (l *logged) of(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[id], "|")
}

func TestContainerProgram(t *testing.T) {
	zero := Latency{}
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var logs logged
	r := New(Config{Clock: clk, Latency: &zero, Node: "n1", OnLog: logs.add})
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, SandboxConfig{Namespace: "default", Name: "p", UID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sb, ContainerConfig{Name: "c", Image: "docker.io/library/busybox:latest",
		Command: []string{"sh", "-c", "touch /tmp/healthy; echo hello; sleep 5; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, id, StateRunning)
	// The program runs touch and echo before sleeping: wait for the timer.
	waitTimer(t, clk)
	res, err := r.ExecSync(ctx, id, []string{"cat", "/tmp/healthy"}, time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("cat /tmp/healthy: %+v %v", res, err)
	}
	res, _ = r.ExecSync(ctx, id, []string{"sh", "-c", "cat /tmp/missing"}, time.Second)
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "can't open '/tmp/missing'") {
		t.Fatalf("cat missing: %+v", res)
	}
	clk.Step(5 * time.Second)
	st := waitState(t, r, id, StateExited)
	if st.ExitCode != 3 || st.Reason != "Error" || st.FinishedAt.Sub(st.StartedAt) != 5*time.Second {
		t.Fatalf("exit: %+v", st)
	}
	if got := logs.of(id); got != "hello" {
		t.Fatalf("logs %q", got)
	}
}

func TestParseProgram(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		cmd, args []string
		ann       map[string]string
		want      string // rendered steps, or the command
		term      bool   // ignores SIGTERM
	}{
		{name: "server runs forever", image: "docker.io/library/nginx:1.27", want: "forever"},
		{name: "busybox default sh exits", image: "docker.io/library/busybox:latest", want: "exit0", term: true},
		{name: "annotation", image: "nginx", ann: map[string]string{AnnotationExitAfter: "5s", AnnotationExitCode: "1"}, want: "sleep5s exit1"},
		{name: "a shell script", cmd: []string{"/bin/sh", "-c"}, args: []string{"sleep 10; exit 2"}, want: "/bin/sh -c sleep 10; exit 2", term: true},
		{name: "sleep", cmd: []string{"sleep", "3600"}, want: "sleep 3600", term: true},
		{name: "a server", cmd: []string{"nginx", "-g", "daemon off;"}, want: "nginx -g daemon off;"},
		// agnhost's entrypoint, with its default command pause.
		{name: "agnhost's arguments", image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", args: []string{"netexec", "--http-port=80"},
			want: "/agnhost netexec --http-port=80"},
		{name: "agnhost's defaults", image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", want: "/agnhost pause"},
		{name: "agnhost's command", image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", cmd: []string{"/agnhost-2"},
			args: []string{"entrypoint-tester"}, want: "/agnhost-2 entrypoint-tester"},
		{name: "nonewprivs' command", image: "registry.k8s.io/e2e-test-images/nonewprivs:1.4", want: "nnp"},
		// kitten and nautilus: agnhost's entrypoint, their command test-webserver.
		{name: "kitten's defaults", image: "registry.k8s.io/e2e-test-images/kitten:1.8", want: "/agnhost test-webserver"},
		{name: "nautilus's defaults", image: "registry.k8s.io/e2e-test-images/nautilus:1.8", want: "/agnhost test-webserver"},
	}
	for _, tt := range tests {
		p, err := parseProgram(tt.image, tt.cmd, tt.args, tt.ann)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		parts := p.argv
		for _, s := range p.steps {
			switch s.op {
			case "sleep":
				parts = append(parts, "sleep"+s.d.String())
			case "exit":
				parts = append(parts, s.op+string(rune('0'+s.code)))
			default:
				parts = append(parts, s.op)
			}
		}
		if got := strings.Join(parts, " "); got != tt.want || p.ignoresTerm != tt.term {
			t.Errorf("%s: %q (ignores SIGTERM: %t), want %q (%t)", tt.name, got, p.ignoresTerm, tt.want, tt.term)
		}
	}
}

// TestContainerCommands runs commands as containers' processes: their
// exit status, when they exit on the runtime's clock, and what they log.
func TestContainerCommands(t *testing.T) {
	zero := Latency{}
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var logs logged
	r := New(Config{Clock: clk, Latency: &zero, Node: "n1", OnLog: logs.add})
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, SandboxConfig{Namespace: "default", Name: "p", UID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		argv []string
		env  map[string]string
		code int
		d    time.Duration
		logs string
	}{
		{argv: []string{"sh", "-c", "exit 1"}, code: 1},
		{argv: []string{"false"}, code: 1},
		{argv: []string{"/bin/sh", "-c", "echo $MODE; sleep 10; exit 2"}, env: map[string]string{"MODE": "debug"}, code: 2, d: 10 * time.Second, logs: "debug"},
		{argv: []string{"sh", "-c", "for i in 1 2; do echo tick $i; sleep 1; done"}, d: 2 * time.Second, logs: "tick 1|tick 2"},
	} {
		id, err := r.CreateContainer(ctx, sb, ContainerConfig{Name: fmt.Sprint("c", i), Image: "docker.io/library/busybox:latest", Command: tc.argv, Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		for elapsed := time.Duration(0); elapsed < tc.d; elapsed += time.Second {
			waitTimer(t, clk)
			clk.Step(time.Second)
		}
		st := waitState(t, r, id, StateExited)
		if st.ExitCode != tc.code || st.FinishedAt.Sub(st.StartedAt) != tc.d {
			t.Errorf("%q: exit %d after %s, want %d after %s", tc.argv, st.ExitCode, st.FinishedAt.Sub(st.StartedAt), tc.code, tc.d)
		}
		if got := logs.of(id); got != tc.logs {
			t.Errorf("%q: logs %q, want %q", tc.argv, got, tc.logs)
		}
	}
}

func TestStopContainer(t *testing.T) {
	zero := Latency{}
	clk := testingclock.NewFakeClock(time.Now())
	r := New(Config{Clock: clk, Latency: &zero})
	ctx := context.Background()
	sb, _ := r.RunPodSandbox(ctx, SandboxConfig{Name: "p"})
	if _, err := r.PullImage(ctx, "nginx:1.27", nil); err != nil {
		t.Fatal(err)
	}
	srv, _ := r.CreateContainer(ctx, sb, ContainerConfig{Name: "web", Image: "docker.io/library/nginx:1.27"})
	sh, _ := r.CreateContainer(ctx, sb, ContainerConfig{Name: "sh", Image: "busybox", Command: []string{"sleep", "3600"}})
	_ = r.StartContainer(ctx, srv)
	_ = r.StartContainer(ctx, sh)
	if err := r.StopContainer(ctx, srv, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := waitState(t, r, srv, StateExited); st.ExitCode != 0 {
		t.Fatalf("nginx exit %d", st.ExitCode)
	}
	if st, _ := r.ContainerStatus(ctx, srv); st.ImageID == "" {
		t.Fatal("no image ID")
	}
	done := make(chan error)
	go func() { done <- r.StopContainer(ctx, sh, 30*time.Second) }()
	for i := 0; i < 2; i++ { // the sleep program's timer and the grace timer
		waitTimer(t, clk)
		time.Sleep(5 * time.Millisecond)
	}
	clk.Step(30 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := waitState(t, r, sh, StateExited); st.ExitCode != 137 {
		t.Fatalf("sleep exit %d, want 137", st.ExitCode)
	}
}
