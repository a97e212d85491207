package job_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/controllers/garbagecollector"
	"github.com/podtrace/podtrace/engine/controllers/job"
	"github.com/podtrace/podtrace/engine/enginetest"
)

const ns = "default"

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}

// cluster is a real API server with the Job controller and the garbage
// collector running under their own identities, and a stand-in kubelet
// that ends each pod's one container with exitCode (a negative one keeps
// it running).
type cluster struct {
	t        *testing.T
	env      *enginetest.Env
	admin    kubernetes.Interface
	ctx      context.Context
	exitCode int32
}

func startCluster(t *testing.T, exitCode int32, speed float64) *cluster {
	t.Helper()
	env := enginetest.Start(t, enginetest.Options{Speed: speed})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	jc, err := job.New(job.Config{Client: env.ClientFor(t, job.DefaultUser, saGroups...), Clock: env.Clock, Tracer: env.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := garbagecollector.New(garbagecollector.Config{Clock: env.Clock,
		Client: env.ClientFor(t, "system:serviceaccount:kube-system:generic-garbage-collector", saGroups...)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []interface{ Start(context.Context) error }{jc, gc} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := &cluster{t: t, env: env, admin: env.Admin(), ctx: ctx, exitCode: exitCode}
	go c.fakeKubelet()
	return c
}

// fakeKubelet ends every pending pod with c.exitCode (Succeeded for 0,
// Failed otherwise) and removes pods being deleted, as a kubelet does.
func (c *cluster) fakeKubelet() {
	for c.ctx.Err() == nil {
		pods, err := c.admin.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				c.runPod(&pods.Items[i])
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cluster) runPod(p *v1.Pod) {
	if p.DeletionTimestamp != nil {
		_ = c.admin.CoreV1().Pods(ns).Delete(c.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		return
	}
	if p.Status.Phase != v1.PodPending {
		return
	}
	if c.exitCode < 0 { // keep running
		p.Status.Phase = v1.PodRunning
		_, _ = c.admin.CoreV1().Pods(ns).UpdateStatus(c.ctx, p, metav1.UpdateOptions{})
		return
	}
	now := metav1.NewTime(c.env.Clock.Now())
	p.Status.Phase = v1.PodSucceeded
	if c.exitCode != 0 {
		p.Status.Phase = v1.PodFailed
	}
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: c.exitCode, StartedAt: now, FinishedAt: now}}}}
	_, _ = c.admin.CoreV1().Pods(ns).UpdateStatus(c.ctx, p, metav1.UpdateOptions{})
}

func newJob(name string, completions, parallelism, backoffLimit *int32) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batch.JobSpec{Completions: completions, Parallelism: parallelism, BackoffLimit: backoffLimit,
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: "work", Image: "busybox:1.36"}}}}},
	}
}

func (c *cluster) create(j *batch.Job) *batch.Job {
	c.t.Helper()
	created, err := c.admin.BatchV1().Jobs(ns).Create(c.ctx, j, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return created
}

func (c *cluster) job(name string) *batch.Job {
	c.t.Helper()
	j, err := c.admin.BatchV1().Jobs(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return j
}

func (c *cluster) pods() []v1.Pod {
	c.t.Helper()
	l, err := c.admin.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return l.Items
}

// events returns "Reason: message" of the job-controller's Events about the Job.
func (c *cluster) events(name string) []string {
	c.t.Helper()
	l, err := c.admin.CoreV1().Events(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == "Job" && e.InvolvedObject.Name == name && e.Source.Component == job.Component {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	sort.Strings(out)
	return out
}

func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	enginetest.WaitFor(c.t, 30*time.Second, what, cond)
}

func conditionTypes(j *batch.Job) []string {
	var out []string
	for _, cond := range j.Status.Conditions {
		if cond.Status == v1.ConditionTrue {
			out = append(out, string(cond.Type)+"/"+cond.Reason)
		}
	}
	return out
}

func isFinished(j *batch.Job, t batch.JobConditionType) bool {
	for _, cond := range j.Status.Conditions {
		if cond.Type == t && cond.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestJobRunsCompletionsAndCompletes(t *testing.T) {
	c := startCluster(t, 0, 1)
	created := c.create(newJob("pi", ptr.To[int32](3), ptr.To[int32](2), nil))
	if got := created.Spec.Selector.MatchLabels[batch.ControllerUidLabel]; got != string(created.UID) {
		t.Fatalf("selector %v, want the generated controller-uid", created.Spec.Selector)
	}
	c.waitFor("Complete", func() bool { return isFinished(c.job("pi"), batch.JobComplete) })
	j := c.job("pi")
	if j.Status.Succeeded != 3 || j.Status.Failed != 0 || j.Status.Active != 0 || *j.Status.Ready != 0 {
		t.Fatalf("status %+v, want succeeded 3 and nothing active", j.Status)
	}
	if got := strings.Join(conditionTypes(j), ","); got != "SuccessCriteriaMet/CompletionsReached,Complete/CompletionsReached" {
		t.Fatalf("conditions %s", got)
	}
	if j.Status.StartTime == nil || j.Status.CompletionTime == nil || j.Status.UncountedTerminatedPods == nil ||
		len(j.Status.UncountedTerminatedPods.Succeeded) != 0 {
		t.Fatalf("times or uncounted pods wrong: %+v", j.Status)
	}
	pods := c.pods()
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	for _, p := range pods {
		if len(p.Finalizers) != 0 || p.Labels[batch.JobNameLabel] != "pi" || metav1.GetControllerOf(&p).UID != j.UID {
			t.Fatalf("pod %s: finalizers %v labels %v owners %v", p.Name, p.Finalizers, p.Labels, p.OwnerReferences)
		}
	}
	c.waitFor("Completed event", func() bool {
		ev := strings.Join(c.events("pi"), "\n")
		return strings.Contains(ev, "Completed: Job completed") && strings.Count(ev, "SuccessfulCreate: Created pod: pi-") == 3
	})
}

func TestJobFailsAfterBackoffLimit(t *testing.T) {
	c := startCluster(t, 1, 50) // the 10 s back-off passes in 0.2 s
	c.create(newJob("fail", nil, nil, ptr.To[int32](1)))
	c.waitFor("Failed", func() bool { return isFinished(c.job("fail"), batch.JobFailed) })
	j := c.job("fail")
	if got := strings.Join(conditionTypes(j), ","); got != "FailureTarget/BackoffLimitExceeded,Failed/BackoffLimitExceeded" {
		t.Fatalf("conditions %s", got)
	}
	for _, cond := range j.Status.Conditions {
		if cond.Type == batch.JobFailed && cond.Message != "Job has reached the specified backoff limit" {
			t.Fatalf("Failed message %q", cond.Message)
		}
	}
	if j.Status.Failed != 2 || j.Status.Succeeded != 0 || j.Status.CompletionTime != nil {
		t.Fatalf("status %+v, want failed 2", j.Status)
	}
	if n := len(c.pods()); n != 2 {
		t.Fatalf("%d pods, want 2", n)
	}
	c.waitFor("BackoffLimitExceeded event", func() bool {
		return strings.Contains(strings.Join(c.events("fail"), "\n"), "BackoffLimitExceeded: Job has reached the specified backoff limit")
	})
}

func TestBackoffDelaysReplacementPod(t *testing.T) {
	c := startCluster(t, 1, 1)
	c.create(newJob("slow", nil, nil, ptr.To[int32](3)))
	c.waitFor("first failure counted", func() bool { return c.job("slow").Status.Failed == 1 })
	time.Sleep(2 * time.Second)
	if n := len(c.pods()); n != 1 {
		t.Fatalf("%d pods 2 s after the failure, want 1 until the 10 s back-off passes", n)
	}
}

func TestDeletingJobDeletesItsPods(t *testing.T) {
	c := startCluster(t, -1, 1)
	c.create(newJob("sleepy", nil, ptr.To[int32](2), nil))
	c.waitFor("2 running pods", func() bool { return c.job("sleepy").Status.Active == 2 })
	for _, p := range c.pods() {
		if strings.Join(p.Finalizers, ",") != job.TrackingFinalizer {
			t.Fatalf("pod %s finalizers %v, want the tracking finalizer", p.Name, p.Finalizers)
		}
	}
	if err := c.admin.BatchV1().Jobs(ns).Delete(c.ctx, "sleepy", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("pods gone", func() bool { return len(c.pods()) == 0 })
}
