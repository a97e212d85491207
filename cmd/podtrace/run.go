package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/outcome"
	"github.com/podtrace/podtrace/source/stream"
)

// Exit codes of `run --headless`.
const (
	exitPodFailed = 2
	exitTimeout   = 3
)

// newRunCmd builds `podtrace run` (and, named "podtrace", the root
// command, which does the same): start the engine, apply -f, and either
// open the UI or, with --headless, print stage events as JSON lines until
// every workload of the manifests is done, one fails, or --timeout passes.
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
URLs, - for standard input; repeatable, as kubectl apply -f) and open the UI. With
--headless, print stage events as JSON lines on stdout until every workload
of the manifests is done, one fails, or --timeout passes. Done is kubectl's
word: a Deployment, StatefulSet or DaemonSet once 'kubectl rollout status'
would say so, a Job once it is Complete, a ReplicaSet once its replicas are
ready, a Pod once it is Running and Ready or Succeeded; and each of their
Ready pods has stayed Ready, with no container restart, for 5s. A stuck pod
(CrashLoopBackOff, ImagePullBackOff, unschedulable, ...) or a Failed Job
fails the run.

Exit codes with --headless: 0 every workload done, 1 bad input or the cluster
did not start, 2 a pod failed or is stuck (or a Job failed), 3 timeout.`,
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
		objs, err := readManifests(files.ToOptions())
		if err != nil {
			return err
		}
		if len(objs) == 0 && headless {
			return errors.New("run --headless needs -f FILE")
		}
		if !headless {
			return runUI(c.Context(), cf.start, objs, theme)
		}
		e, cleanup, err := cf.start(c.Context())
		if err != nil {
			return err
		}
		defer cleanup()
		return runHeadless(c.Context(), e, objs, timeout)
	}
	return c
}

// runHeadless applies the manifests and prints stage events until every
// workload of objs is done (exit 0), one fails (exit 2) or timeout passes
// (exit 3).
func runHeadless(ctx context.Context, e *engine.Engine, objs []apply.Object, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stopExport, err := stream.Export(e.Hub)
	if err != nil {
		return err
	}
	defer stopExport()
	printed := stream.Print(os.Stdout, e.Hub, nil) // engine.Start returned with every node Ready
	defer printed.Stop()
	applier, err := apply.New(e.AdminConfig())
	if err != nil {
		return err
	}
	if err := applyManifests(ctx, applier, objs); err != nil {
		return err
	}
	watch, err := newRunTargets(e, objs)
	if err != nil {
		return err
	}
	judge := outcome.NewTracker(outcome.Settle)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var s outcome.Summary
	for {
		select {
		case <-ctx.Done():
			printed.Flush()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &exitError{code: exitTimeout, err: fmt.Errorf("timed out after %s waiting for %s", timeout, strings.Join(s.Waiting, "; "))}
			}
			return ctx.Err()
		case <-tick.C:
		}
		pods, err := watch.refresh(ctx)
		if err != nil {
			continue
		}
		if s = judge.Judge(watch.targets, pods, time.Now()); !s.Finished() {
			continue
		}
		printed.Flush()
		if s.Failed > 0 {
			return &exitError{code: exitPodFailed, err: fmt.Errorf("%d of %d workloads failed: %s", s.Failed, s.Done+s.Failed, strings.Join(s.Reasons, "; "))}
		}
		return nil
	}
}

// runTargets are the objects a headless run waits for, and where to find
// them.
type runTargets struct {
	dyn        dynamic.Interface
	pods       kubernetes.Interface
	targets    []outcome.Target
	resources  []schema.GroupVersionResource // of each target
	namespaces []string                      // of the targets, each once
}

// newRunTargets lists the objects of objs that a run waits for (the kinds
// outcome.Watched names, served by e).
func newRunTargets(e *engine.Engine, objs []apply.Object) (*runTargets, error) {
	mapper, err := apply.Mapper(e.AdminConfig())
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		return nil, err
	}
	r := &runTargets{dyn: dyn, pods: e.AdminClient()}
	for _, o := range watchedObjects(objs) {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		r.targets = append(r.targets, outcome.Target{Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
		r.resources = append(r.resources, mapping.Resource)
		if !slices.Contains(r.namespaces, o.GetNamespace()) {
			r.namespaces = append(r.namespaces, o.GetNamespace())
		}
	}
	return r, nil
}

// watchedObjects returns the objects of kinds a run waits for, each with
// its namespace ("default" when the manifest names none).
func watchedObjects(objs []apply.Object) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if !outcome.Watched(o.GroupVersionKind().GroupKind()) {
			continue
		}
		u := o.DeepCopy()
		if u.GetNamespace() == "" {
			u.SetNamespace(metav1.NamespaceDefault)
		}
		out = append(out, u)
	}
	return out
}

// refresh fetches the targets' live copies (one list per kind and
// namespace) and returns the pods of their namespaces.
func (r *runTargets) refresh(ctx context.Context) ([]corev1.Pod, error) {
	type key struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	lists := map[key]map[string]*unstructured.Unstructured{}
	for i := range r.targets {
		k := key{r.resources[i], r.targets[i].Namespace}
		if _, ok := lists[k]; !ok {
			list, err := r.dyn.Resource(k.gvr).Namespace(k.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			byName := map[string]*unstructured.Unstructured{}
			for j := range list.Items {
				byName[list.Items[j].GetName()] = &list.Items[j]
			}
			lists[k] = byName
		}
		r.targets[i].Live = lists[k][r.targets[i].Name]
	}
	var all []corev1.Pod
	for _, ns := range r.namespaces {
		list, err := r.pods.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		all = append(all, list.Items...)
	}
	return all, nil
}
