package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultTolerationSeconds adds NoExecute tolerations for the not-ready and
// unreachable node taints, 300 seconds each, to pods that do not already
// tolerate them, as upstream's plugin of that name does.
type DefaultTolerationSeconds struct {
	notReady, unreachable corev1.Toleration
}

// NewDefaultTolerationSeconds returns the plugin with upstream's 300 s.
func NewDefaultTolerationSeconds() *DefaultTolerationSeconds {
	secs := int64(300)
	return &DefaultTolerationSeconds{
		notReady: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		unreachable: corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
	}
}

// Name returns "DefaultTolerationSeconds".
func (*DefaultTolerationSeconds) Name() string { return "DefaultTolerationSeconds" }

// Admit adds the missing tolerations.
func (p *DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	if !isPod(a) || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *api.Pod but got %T", a.Object))
	}
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		noExec := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		if (t.Key == corev1.TaintNodeNotReady || t.Key == "") && noExec {
			notReady = true
		}
		if (t.Key == corev1.TaintNodeUnreachable || t.Key == "") && noExec {
			unreachable = true
		}
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, *p.notReady.DeepCopy())
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, *p.unreachable.DeepCopy())
	}
	return nil
}
