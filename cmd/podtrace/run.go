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

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/outcome"
	"github.com/podtrace/podtrace/engine/trace"
)

// Exit codes of `run --headless`.
const (
	exitPodFailed = 2
	exitTimeout   = 3
)

// newRunCmd builds `podtrace run` (and, named "podtrace", the root
// command, which does the same): start the engine, apply -f, and either
// open the UI or, with --headless, print stage events as JSON lines until
// every pod is Ready (or Succeeded), a pod fails, or --timeout passes.
func newRunCmd(use string) *cobra.Command {
	var (
		cf       clusterFlags
		headless bool
		timeout  time.Duration
		theme    string
	)
	c := &cobra.Command{
		Use:   use + " [-f FILE|DIR]... [flags]",
		Short: "Start the embedded cluster, apply manifests, and show each pod's stages",
		Long: `Start the embedded cluster, apply the manifests -f names (files, directories,
- for standard input; repeatable, as kubectl apply -f) and open the UI. With
--headless, print stage events as JSON lines on stdout until every pod is
Running and Ready (or Succeeded), a pod fails, or --timeout passes. A pod
counts as Ready once it has stayed Ready, with no container restart, for 5s;
a crash-looping pod fails the run with CrashLoopBackOff.

Exit codes with --headless: 0 every pod Ready or Succeeded, 1 bad input or the
cluster did not start, 2 a pod failed or is stuck, 3 timeout.`,
		Example: `  podtrace run -f examples/web.yaml --headless
  podtrace run -f a.yaml -f b.yaml -f manifests/ --headless --nodes 5
  podtrace run --fault pull:fail@pod/default/web -f examples/web.yaml`,
		Args: noArgs,
	}
	files := filenameFlags(c.Flags())
	cf.register(c.Flags(), 3)
	c.Flags().BoolVar(&headless, "headless", false, "no UI: print stage events as JSON lines on stdout")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long (headless)")
	c.Flags().StringVar(&theme, "theme", "dark", "UI theme: dark, light, high-contrast, colorblind")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if ran, err := cf.enterPodNetwork(); ran {
			return err
		}
		ms, err := readManifests(files.ToOptions(), os.Stdin)
		if err != nil {
			return err
		}
		if len(ms) == 0 && headless {
			return errors.New("run --headless needs -f FILE")
		}
		objs, err := parseManifests(ms)
		if err != nil {
			return err
		}
		if !headless {
			return runUI(c.Context(), cf.start, ms, theme)
		}
		e, cleanup, err := cf.start(c.Context())
		if err != nil {
			return err
		}
		defer cleanup()
		return runHeadless(c.Context(), e, ms, objs, timeout)
	}
	return c
}

// runHeadless applies the manifests and prints stage events until the pods
// of objs are done (exit 0), one fails (exit 2) or timeout passes (exit 3).
func runHeadless(ctx context.Context, e *engine.Engine, ms []manifest, objs []apply.Object, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sub := e.Hub.Subscribe()
	defer sub.Close()
	go printEvents(sub) // engine.Start returned with every node Ready
	applier, err := apply.New(e.AdminConfig())
	if err != nil {
		return err
	}
	if err := applyManifests(ctx, applier, ms); err != nil {
		return err
	}
	expected, namespaces := expectedPods(objs)
	judge := outcome.NewTracker(outcome.Settle)
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
		s := judge.Judge(pods, expected, time.Now())
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

// printEvents writes each of sub's stage events to stdout, one JSON object
// a line, until sub is closed.
func printEvents(sub *trace.Subscription) {
	enc := json.NewEncoder(os.Stdout)
	for ev := range sub.C() {
		if enc.Encode(ev) != nil {
			return
		}
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
