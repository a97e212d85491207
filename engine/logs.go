package engine

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podLogs serves pods/log from the runtime of the pod's node: the lines the
// container wrote, the last tail of them, then new ones while following.
func (e *Engine) podLogs(ctx context.Context, namespace, pod, container string, follow bool, tail int64, w func([]byte) error) error {
	p, err := e.AdminClient().CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	k := e.Kubelet(p.Spec.NodeName)
	if k == nil {
		return apierrors.NewBadRequest("pod " + pod + " is not on a podtrace node")
	}
	id := containerID(p, container)
	if id == "" {
		return apierrors.NewBadRequest("container \"" + container + "\" in pod \"" + pod + "\" is waiting to start: ContainerCreating")
	}
	sent := 0
	for first := true; ; first = false {
		lines, err := k.Runtime().ContainerLogs(ctx, id)
		if err != nil {
			return err
		}
		if first && tail >= 0 && int64(len(lines)) > tail {
			sent = len(lines) - int(tail)
		}
		for ; sent < len(lines); sent++ {
			if err := w([]byte(lines[sent].Text + "\n")); err != nil {
				return err
			}
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// containerID finds the runtime ID of a pod's container from its status.
func containerID(p *corev1.Pod, name string) string {
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == name && s.ContainerID != "" {
			if _, id, ok := strings.Cut(s.ContainerID, "://"); ok {
				return id
			}
			return s.ContainerID
		}
	}
	return ""
}
