package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/source/cluster"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// startBin starts bin with args and stops it with SIGINT when the test ends.
func startBin(t *testing.T, bin string, stdout, stderr io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
		}
	})
	return cmd
}

func waitFile(t *testing.T, path string, timeout time.Duration, ok func([]byte) bool) []byte {
	t.Helper()
	var data []byte
	waittest.Eventually(t, path, timeout, func() (bool, string) {
		var err error
		data, err = os.ReadFile(path)
		return err == nil && ok(data), fmt.Sprintf("%d bytes, %v", len(data), err)
	})
	return data
}

// waitAPIReady waits until the API server c talks to is ready, as kubectl
// get --raw /readyz would say: serve writes its kubeconfig before that.
// serveErr is serve's standard error, shown if it never is.
func waitAPIReady(t *testing.T, c kubernetes.Interface, serveErr fmt.Stringer) {
	t.Helper()
	waittest.EventuallyEvery(t, "the API server ready", 200*time.Millisecond, clusterStart, func() (bool, string) {
		body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && string(body) == "ok", fmt.Sprintf("%q %v (serve: %s)", body, err, serveErr.String())
	})
}

// TestAttachRecordAndReplay serves an embedded cluster, attaches to it as to
// any cluster (its kubeconfig only) with --headless --record, creates a
// Deployment and an unschedulable pod through the API, then replays the
// recording: the lanes show every observable stage done, the API stages
// as not observable, and the scheduler's FailedScheduling.
func TestAttachRecordAndReplay(t *testing.T) {
	t.Parallel()
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	var serveOut bytes.Buffer
	serveErr := &syncbuf.Buffer{}
	startBin(t, bin, &serveOut, serveErr, "serve", "--nodes", "2", "--data-dir", filepath.Join(dir, "cluster"))
	kubeconfig := filepath.Join(dir, "cluster", "kubeconfig")
	waitFile(t, kubeconfig, clusterStart, func(b []byte) bool { return len(b) > 0 })
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	waitAPIReady(t, c, serveErr)

	// Wrong credentials and an unknown CA fail in one line too.
	server := cfg.Host
	for _, tt := range []struct{ user, cluster, want string }{
		{"{token: not-a-token}", "{server: " + server + ", insecure-skip-tls-verify: true}", "podtrace: attach to x: cannot read pods: Unauthorized"},
		{"{token: not-a-token}", "{server: " + server + "}", "podtrace: attach to x: cannot read pods: "},
	} {
		kc := filepath.Join(dir, "bad-kubeconfig")
		body := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: " + tt.cluster + "}]\n" +
			"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nusers: [{name: u, user: " + tt.user + "}]\n"
		if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := run(t, bin, "attach", "--kubeconfig", kc, "--headless")
		if code != 1 || !strings.HasPrefix(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("exit %d, stderr %q, want one line starting %q", code, errOut, tt.want)
		}
	}

	rec := filepath.Join(dir, "rec.jsonl")
	var attOut, attErr bytes.Buffer
	att := startBin(t, bin, &attOut, &attErr, "attach", "--kubeconfig", kubeconfig, "--headless", "--record", rec)

	n := int32(2)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	big := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}}}}}}
	waittest.EventuallyEvery(t, "the deployment to be created", 200*time.Millisecond, time.Minute, func() (bool, string) {
		_, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("%v (serve: %s)", err, serveErr.String())
	})
	if _, err := c.CoreV1().Pods("default").Create(ctx, big, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := waitFile(t, rec, 60*time.Second, func(b []byte) bool {
		return bytes.Count(b, []byte(`"stage":"ready","status":"succeeded"`)) >= 2 &&
			bytes.Contains(b, []byte(`"FailedScheduling"`))
	})
	_ = att.Process.Signal(syscall.SIGINT)
	if err := att.Wait(); err != nil {
		t.Fatalf("attach did not stop cleanly on SIGINT: %v (%s)", err, attErr.String())
	}
	data, _ = os.ReadFile(rec)
	if attErr.Len() != 0 {
		t.Errorf("attach wrote on stderr: %q", attErr.String())
	}
	if !bytes.Equal(attOut.Bytes(), data) {
		t.Errorf("--headless printed %d bytes, --record wrote %d; want the same stream", attOut.Len(), len(data))
	}
	evs, err := tui.ReadEvents(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Stage == stages.Authn || e.Stage == stages.Authz || e.Stage == stages.Admission {
			t.Errorf("attach without --audit-log reported %s for %s", e.Stage, e.Pod)
		}
	}

	out, errOut, code := run(t, bin, "replay", rec, "--snapshot", "240x20")
	if code != 0 {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	t.Logf("replay snapshot:\n%s", out)
	if !strings.Contains(out, "recording rec.jsonl") {
		t.Error("header does not name the recording")
	}
	var webRows int
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "▶" { // the selected row
			f = f[1:]
		}
		switch {
		case len(f) > 2 && strings.HasPrefix(f[0], "web-") && !strings.HasPrefix(f[1], "1/") && !strings.HasPrefix(f[1], "2/"):
			webRows++
			// authn authz admission not observable, then persist … ready done
			// (at 240 columns the cells show beside the detail pane).
			if strings.Count(line, "✓") != 12 {
				t.Errorf("web pod row has %d done stages, want 12: %q", strings.Count(line, "✓"), line)
			}
		case len(f) > 0 && f[0] == "big":
			if !strings.Contains(line, "↻") {
				t.Errorf("unschedulable pod's row shows no retrying schedule: %q", line)
			}
		}
	}
	if webRows != 2 {
		t.Errorf("%d web pod rows in the replay, want 2", webRows)
	}
	out2, _, _ := run(t, bin, "replay", rec, "--snapshot", "240x20")
	if out2 != out {
		t.Error("two snapshots of the same recording differ")
	}
}

// TestAttachOneLineErrors: attach, agent and replay fail in one line,
// exit 1, on what they cannot use. Each run is a process of its own.
func TestAttachOneLineErrors(t *testing.T) {
	t.Parallel()
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: abc}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable", []string{"attach", "--kubeconfig", kc}, "podtrace: attach to x: cannot read pods: "},
		{"missing kubeconfig", []string{"attach", "--kubeconfig", filepath.Join(dir, "none")}, "podtrace: kubeconfig "},
		{"unknown context", []string{"attach", "--kubeconfig", kc, "--context", "prod"}, `podtrace: kubeconfig: context "prod" does not exist`},
		{"bad target", []string{"attach", "--kubeconfig", kc, "svc/web"}, `podtrace: target "svc/web": unknown kind "svc"`},
		{"agent unreachable", []string{"agent", "--kubeconfig", kc}, "podtrace: agent for x: cannot reach the API server: "},
		{"replay nothing", []string{"replay"}, "podtrace: replay needs a recording"},
		{"replay bad line", []string{"replay", kc}, "podtrace: replay kc: line 1: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := run(t, bin, tt.args...)
			if code != 1 || !strings.HasPrefix(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q, want one line starting %q", code, errOut, tt.want)
			}
		})
	}
}

func TestRecordingStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(s stages.ID, ns int) stages.Event {
		return stages.Event{Pod: "p", Stage: s, Status: stages.Succeeded, Time: t0.Add(time.Duration(ns))}
	}
	attached := []stages.Event{ev(stages.Persist, 0), ev(stages.Schedule, 0), ev(stages.Ready, 0)}
	st := recordingStatus(attached)
	if st.Resolution != time.Second {
		t.Errorf("resolution %v, want 1s for whole-second times", st.Resolution)
	}
	want := "authn authz admission reconcile bind kubelet sandbox cni pull create start hooks"
	if got := fmtIDs(st.Unobservable); got != want {
		t.Errorf("unobservable %q, want %q", got, want)
	}
	embedded := []stages.Event{ev(stages.Authn, 5), ev(stages.Persist, 7), ev(stages.Ready, 9)}
	if st := recordingStatus(embedded); st.Resolution != 0 {
		t.Errorf("resolution %v for nanosecond times, want exact", st.Resolution)
	}
}

func fmtIDs(ids []stages.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, " ")
}

// TestAttachSourceHeader: the header names the cluster's context, says it
// is read-only and why, and the lanes mark what a cluster does not expose.
func TestAttachSourceHeader(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := cluster.New(ctx, cluster.Config{Client: fake.NewClientset(), Context: "prod-eu", Namespace: "default"})
	if src.Name() != "cluster prod-eu" {
		t.Errorf("name %q", src.Name())
	}
	st := src.Status()
	if st.ReadOnly != "read-only: attached to cluster prod-eu" || st.Resolution != time.Second || len(st.Unobservable) != 4 {
		t.Errorf("status %+v", st)
	}
	if err := src.Apply(nil); err == nil || err.Error() != st.ReadOnly {
		t.Errorf("apply: %v, want the read-only reason", err)
	}
	if src.Faults() != nil || src.Clock() != nil {
		t.Error("a cluster offers faults or clock controls")
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []stages.Record{{Event: stages.Event{Time: t0, Namespace: "default", Pod: "web-1", Stage: stages.Persist, Status: stages.Succeeded, Component: "kube-apiserver"}}}
	frame := Snapshot(src, recs, 120, 12)
	if !strings.Contains(frame, "cluster prod-eu") || !strings.Contains(frame, "read-only") {
		t.Errorf("header does not name the cluster:\n%s", frame)
	}
	if !strings.Contains(frame, "web-1") || !strings.Contains(frame, "–") {
		t.Errorf("lane without the not-observable marks:\n%s", frame)
	}
}
