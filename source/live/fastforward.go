package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/source/cluster"
)

// fastForwardAnnotation is the annotation > sets on a ReplicaSet short of
// pods: a real update, which the ReplicaSet controller's informer queues at
// once, whatever its workqueue back-off after refused creates.
const fastForwardAnnotation = "podtrace.dev/fast-forwarded-at"

// FastForward runs the pending retries that an upstream action can run now,
// and says which: kube-scheduler's (every pod waiting in its unschedulable
// or back-off queue is activated, as a cluster event would), the ReplicaSet
// controller's (each ReplicaSet short of pods is annotated, as kubectl
// annotate would: its controller syncs it at once), and the waits of delay
// faults. The kubelet's back-offs cannot be shortened; it says whose they
// are and how long is left.
func (c paceControl) FastForward() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ran []string
	if c.e.Scheduler != nil {
		if n := c.e.Scheduler.ActivatePending(ctx); n > 0 {
			ran = append(ran, plural(n, "pending pod")+" back in kube-scheduler's queue")
		}
	}
	client := c.e.AdminClient()
	if synced := syncShortReplicaSets(ctx, client, time.Now()); len(synced) > 0 {
		ran = append(ran, fmt.Sprintf("the ReplicaSet controller syncs %s now (annotated %s, as kubectl annotate would)",
			strings.Join(synced, ", "), fastForwardAnnotation))
	}
	if skipped := c.e.Tracer.Faults.SkipDelays(); skipped > 0 {
		ran = append(ran, plural(skipped, "delay fault")+" ended")
	}
	waits := kubeletWaits(ctx, client, time.Now())
	if len(ran) == 0 {
		msg := "nothing to fast-forward: the real kubelet's back-offs run on real time"
		if waits != "" {
			msg += " (" + waits + ")"
		}
		return "", fmt.Errorf("%s", msg)
	}
	if waits != "" {
		ran = append(ran, "the kubelet's back-offs run on real time ("+waits+")")
	}
	return strings.Join(ran, "; "), nil
}

// syncShortReplicaSets annotates every ReplicaSet that has fewer pods than
// it wants and returns them as namespace/name.
func syncShortReplicaSets(ctx context.Context, client kubernetes.Interface, now time.Time) []string {
	list, err := client.AppsV1().ReplicaSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, fastForwardAnnotation, now.UTC().Format(time.RFC3339Nano))
	var out []string
	for i := range list.Items {
		rs := &list.Items[i]
		if !short(rs) {
			continue
		}
		if _, err := client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err == nil {
			out = append(out, rs.Namespace+"/"+rs.Name)
		}
	}
	return out
}

// short reports whether a ReplicaSet has fewer pods than it wants.
func short(rs *appsv1.ReplicaSet) bool {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	return rs.DeletionTimestamp == nil && rs.Status.Replicas < want
}

// kubeletWaits says the first pod waiting on a kubelet back-off, when its
// next try comes, and how many more wait: "" when none does.
func kubeletWaits(ctx context.Context, client kubernetes.Interface, now time.Time) string {
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	var first string
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if !backingOff(p) {
			continue
		}
		n++
		if first != "" {
			continue
		}
		d, err := cluster.PodDetail(ctx, client, p.Namespace, p.Name)
		if bs := d.Backoffs(); err == nil && len(bs) > 0 {
			first = p.Namespace + "/" + p.Name + ": " + bs[0].String(now)
		}
	}
	if first == "" {
		return ""
	}
	if n > 1 {
		first += fmt.Sprintf("; %d more pods wait on one", n-1)
	}
	return first
}

// backingOff reports whether a container of the pod waits on a kubelet back-off.
func backingOff(p *corev1.Pod) bool {
	for _, st := range p.Status.ContainerStatuses {
		if w := st.State.Waiting; w != nil && (w.Reason == "CrashLoopBackOff" || w.Reason == "ImagePullBackOff" || w.Reason == "ErrImagePull") {
			return true
		}
	}
	return false
}
