package controlplane

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// HostPathDeletePolicy names the ValidatingAdmissionPolicy, and its binding,
// that refuses a hostPath PersistentVolume kube-controller-manager would
// delete.
//
// kube-controller-manager's hostPath plugin deletes a released volume's
// path itself, with os.RemoveAll in its own process, when its reclaim
// policy is Delete, no provisioner outside Kubernetes made it (the PV
// controller's findDeletablePlugin), and the path matches /tmp/.+
// anywhere in it. On a real cluster that process runs on a control-plane
// node; podtrace runs it on the user's machine, where the simulated
// nodes' host paths are not (they live under DATA_DIR/host/NODE). Left
// alone it would remove a directory of the machine running podtrace.
// The policy is upstream's own admission machinery, so `kubectl get
// validatingadmissionpolicies` shows it and a refusal reads as any
// policy's does.
const HostPathDeletePolicy = "podtrace.dev-hostpath-reclaim-delete"

// hostPathDeletable is the policy's rule, in CEL: the volume is not one
// the hostPath deleter would remove, or an update leaves one that already
// was (its controllers may still bind it and release its finalizer).
const hostPathDeletable = `!has(object.spec.hostPath) ||
	object.spec.persistentVolumeReclaimPolicy != 'Delete' ||
	!object.spec.hostPath.path.matches('/tmp/.+') ||
	(has(object.metadata.annotations) && 'pv.kubernetes.io/provisioned-by' in object.metadata.annotations &&
		!object.metadata.annotations['pv.kubernetes.io/provisioned-by'].startsWith('kubernetes.io/')) ||
	(request.operation == 'UPDATE' && has(oldObject.spec.hostPath) &&
		oldObject.spec.persistentVolumeReclaimPolicy == 'Delete')`

// hostPathDeleteMessage is what a refused request is told.
const hostPathDeleteMessage = "podtrace: a hostPath PersistentVolume under /tmp may not have persistentVolumeReclaimPolicy Delete here: " +
	"kube-controller-manager runs on the machine running podtrace, not on a node, and would remove the path " +
	"from that machine when the volume is released; use Retain (the default for a volume you create)"

// applyHostPathDeletePolicy installs HostPathDeletePolicy and its binding,
// server-side applied so that a restart on the same data dir brings an
// edited copy back to this one.
func applyHostPathDeletePolicy(ctx context.Context, client kubernetes.Interface) error {
	apply := metav1.ApplyOptions{FieldManager: "podtrace", Force: true}
	policy := admissionv1ac.ValidatingAdmissionPolicy(HostPathDeletePolicy).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
			WithFailurePolicy(admissionregistrationv1.Fail).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				admissionv1ac.NamedRuleWithOperations().
					WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update).
					WithAPIGroups("").WithAPIVersions("v1").WithResources("persistentvolumes"))).
			WithValidations(admissionv1ac.Validation().
				WithExpression(hostPathDeletable).
				WithReason(metav1.StatusReasonForbidden).
				WithMessage(hostPathDeleteMessage)))
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Apply(ctx, policy, apply); err != nil {
		return fmt.Errorf("hostPath delete policy: %w", err)
	}
	binding := admissionv1ac.ValidatingAdmissionPolicyBinding(HostPathDeletePolicy).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(HostPathDeletePolicy).
			WithValidationActions(admissionregistrationv1.Deny))
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Apply(ctx, binding, apply); err != nil {
		return fmt.Errorf("hostPath delete policy binding: %w", err)
	}
	return nil
}

// waitHostPathDeletePolicy waits until kube-apiserver enforces
// HostPathDeletePolicy (its policy source loads policies every second):
// a dry-run create of a volume the deleter would remove is refused.
func waitHostPathDeletePolicy(ctx context.Context, client kubernetes.Interface) error {
	probe := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "podtrace-policy-probe"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/podtrace-policy-probe"}},
		},
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().PersistentVolumes().Create(ctx, probe, dryRun)
		return apierrors.IsForbidden(err), nil
	})
	if err != nil {
		return fmt.Errorf("hostPath delete policy not in force: %w", err)
	}
	klog.InfoS("hostPath delete policy in force", "waited", time.Since(start))
	return nil
}
