package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/outcome"
)

// Exit codes of `run --headless`.
const (
	exitPodFailed = 2
	exitTimeout   = 3
)

// runCmd starts the engine, applies -f, and either opens the UI or, with
// --headless, prints stage events as JSON lines until every pod is Ready
// (or Succeeded), a pod fails, or --timeout passes.
func runCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("run")
	var cf clusterFlags
	cf.register(fs, 3)
	file := fs.String("f", "", "apply the manifest `FILE` (- for standard input) at start")
	headless := fs.Bool("headless", false, "no UI: print stage events as JSON lines on stdout")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long (headless)")
	theme := fs.String("theme", "dark", "UI theme: dark, light, high-contrast, colorblind")
	if err := parse(fs, args); err != nil {
		return err
	}
	var manifest []byte
	var objs []apply.Object
	if *file != "" {
		var err error
		if manifest, err = readManifest(*file); err != nil {
			return err
		}
		if objs, err = apply.Parse(manifest, *file); err != nil && (len(objs) == 0 || !warnUnserved(err)) {
			return err
		}
	} else if *headless {
		return errors.New("run --headless needs -f FILE")
	}
	if !*headless {
		return runUI(ctx, cf.start, manifest, *file, *theme)
	}
	e, cleanup, err := cf.start(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	return runHeadless(ctx, e, manifest, *file, objs, *timeout)
}

// warnUnserved tells, one line each, which objects of the manifest podtrace
// leaves out because it does not serve their kinds, and reports whether err
// was only that (so the run goes on with the rest).
func warnUnserved(err error) bool {
	var unserved *apply.UnservedError
	if !errors.As(err, &unserved) {
		return false
	}
	for _, e := range unserved.Errors {
		fmt.Fprintf(os.Stderr, "podtrace: skipping %v\n", e)
	}
	return true
}

func readManifest(file string) ([]byte, error) {
	if file == "-" {
		return readAll(os.Stdin)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return data, nil
}

func runHeadless(ctx context.Context, e *engine.Engine, manifest []byte, file string, objs []apply.Object, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sub := e.Hub.Subscribe()
	defer sub.Close()
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		enc := json.NewEncoder(os.Stdout)
		for ev := range sub.C() {
			if enc.Encode(ev) != nil {
				return
			}
		}
	}()
	if err := waitNodesReady(ctx, e); err != nil {
		return &exitError{code: exitTimeout, err: err}
	}
	applier, err := apply.New(e.AdminConfig())
	if err != nil {
		return err
	}
	var unserved *apply.UnservedError
	if _, err := applier.Apply(ctx, manifest, file); err != nil && !errors.As(err, &unserved) {
		return err
	}
	expected, namespaces := expectedPods(objs)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			flush(sub)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &exitError{code: exitTimeout, err: fmt.Errorf("timed out after %s waiting for pods to be Ready", timeout)}
			}
			return ctx.Err()
		case <-tick.C:
		}
		pods, err := listPods(ctx, e, namespaces)
		if err != nil {
			continue
		}
		s := outcome.Judge(pods, expected)
		if !s.Finished() {
			continue
		}
		flush(sub)
		if s.Failed > 0 {
			return &exitError{code: exitPodFailed, err: fmt.Errorf("%d of %d pods failed: %s", s.Failed, s.Done+s.Failed,
				strings.Join(s.Reasons, "; "))}
		}
		return nil
	}
}

// flush waits (briefly) until every emitted event has been printed.
func flush(sub interface{ Pending() int }) {
	deadline := time.Now().Add(2 * time.Second)
	for sub.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the printer finish its last line
}

// waitNodesReady waits until every node has registered and is Ready.
func waitNodesReady(ctx context.Context, e *engine.Engine) error {
	for {
		list, err := e.AdminClient().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			ready := 0
			for _, n := range list.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready >= len(e.Kubelets) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not Ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// expectedPods counts the pods a manifest asks for, and their namespaces.
func expectedPods(objs []apply.Object) (int, []string) {
	n := 0
	seen := map[string]bool{}
	var namespaces []string
	for _, o := range objs {
		count := 0
		switch o.GetKind() {
		case "Pod":
			count = 1
		case "Deployment", "ReplicaSet":
			replicas, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			count = int(replicas)
			if !found {
				count = 1
			}
		case "Job": // done once completions pods (1 by default) have succeeded
			completions, found, _ := unstructured.NestedInt64(o.Object, "spec", "completions")
			count = int(completions)
			if !found {
				count = 1
			}
		}
		if count == 0 {
			continue
		}
		n += count
		ns := o.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		if !seen[ns] {
			seen[ns] = true
			namespaces = append(namespaces, ns)
		}
	}
	return n, namespaces
}

func listPods(ctx context.Context, e *engine.Engine, namespaces []string) ([]corev1.Pod, error) {
	var all []corev1.Pod
	for _, ns := range namespaces {
		list, err := e.AdminClient().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		all = append(all, list.Items...)
	}
	return all, nil
}
