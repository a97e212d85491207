package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
)

// TestAttachContextAndNamespace attaches with kubectl's --context and -n
// to a kubeconfig of three contexts: the current one points at nothing,
// podtrace-viewer may not read team-a, podtrace-admin may. Only the
// context named is used, and only the namespace named is shown; -A shows
// every namespace in a NAMESPACE column, and a missing target is
// kubectl's NotFound.
func TestAttachContextAndNamespace(t *testing.T) {
	t.Parallel()
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	var serveOut, serveErr syncbuf.Buffer
	startBin(t, bin, &serveOut, &serveErr, "serve", "--nodes", "1", "--data-dir", filepath.Join(dir, "cluster"))
	served := filepath.Join(dir, "cluster", "kubeconfig")
	waitFile(t, served, clusterStart, func(b []byte) bool { return len(b) > 0 })

	kc, err := clientcmd.LoadFromFile(served)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"podtrace-admin", "podtrace-viewer"} {
		if kc.Contexts[name] == nil {
			t.Fatalf("served kubeconfig has no context %s", name)
		}
	}
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: kc.Contexts["podtrace-admin"].AuthInfo}
	kc.CurrentContext = "nowhere"
	multi := filepath.Join(dir, "multi-kubeconfig")
	if err := clientcmd.WriteToFile(*kc, multi); err != nil {
		t.Fatal(err)
	}

	cfg, err := clientcmd.NewNonInteractiveClientConfig(*kc, "podtrace-admin", nil, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	waittest.EventuallyEvery(t, "namespace team-a to be created", 200*time.Millisecond, clusterStart, func() (bool, string) {
		_, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("%v (serve: %s)", err, serveErr.String())
	})

	for _, tt := range []struct{ name, want string }{
		{"current context", "podtrace: attach to nowhere: cannot read pods: "},
		{"podtrace-viewer", `podtrace: attach to podtrace-viewer: cannot read pods: `},
	} {
		args := []string{"attach", "--kubeconfig", multi, "--headless", "-n", "team-a"}
		if tt.name != "current context" {
			args = append(args, "--context", tt.name)
		}
		_, errOut, code := run(t, bin, args...)
		if code != 1 || !strings.HasPrefix(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q, want one line starting %q", tt.name, code, errOut, tt.want)
		}
	}

	var attOut, attErr syncbuf.Buffer
	att := startBin(t, bin, &attOut, &attErr, "attach", "--headless", "--context", "podtrace-admin", "--kubeconfig", multi, "-n", "team-a")
	pod := func(namespace, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod("default", "elsewhere"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("team-a").Create(ctx, pod("team-a", "here"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, "pod team-a/here Ready in attach's stream", 2*time.Minute, func() (bool, string) {
		out := attOut.String()
		return strings.Contains(out, `"pod":"here"`) && strings.Contains(out, `"stage":"ready","status":"succeeded"`),
			out + "\nstderr: " + attErr.String()
	})
	_ = att.Process.Signal(syscall.SIGINT)
	if err := att.Wait(); err != nil {
		t.Fatalf("attach did not stop cleanly: %v (%s)", err, attErr.String())
	}
	if out := attOut.String(); strings.Contains(out, `"pod":"elsewhere"`) || strings.Contains(out, `"namespace":"default"`) {
		t.Errorf("-n team-a showed a pod of default:\n%s", out)
	}

	// -A shows both namespaces, and the lanes get a NAMESPACE column.
	rec := filepath.Join(dir, "all.jsonl")
	var allOut, allErr syncbuf.Buffer
	all := startBin(t, bin, &allOut, &allErr, "attach", "-A", "--headless", "--record", rec, "--context", "podtrace-admin", "--kubeconfig", multi)
	waitFile(t, rec, 60*time.Second, func(b []byte) bool {
		return strings.Contains(string(b), `"pod":"here"`) && strings.Contains(string(b), `"pod":"elsewhere"`)
	})
	_ = all.Process.Signal(syscall.SIGINT)
	if err := all.Wait(); err != nil {
		t.Fatalf("attach -A did not stop cleanly: %v (%s)", err, allErr.String())
	}
	out, errOut, code := run(t, bin, "replay", rec, "--snapshot", "120x20")
	if code != 0 {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "NAMESPACE") || !strings.Contains(rowWith(out, " here "), "team-a") ||
		!strings.Contains(rowWith(out, " elsewhere "), "default") {
		t.Errorf("attach -A lanes without their namespaces:\n%s", out)
	}

	// A target that does not exist is kubectl's NotFound, in one line.
	_, errOut, code = run(t, bin, "attach", "--kubeconfig", multi, "--context", "podtrace-admin", "--headless", "deploy/nothere")
	want := `Error from server (NotFound): deployments.apps "nothere" not found`
	if code != 1 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("attach deploy/nothere: exit %d, stderr %q, want one line with %q", code, errOut, want)
	}
}

// rowWith returns the first line of s that contains sub.
func rowWith(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}
