package controlplane

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
)

// HostPathDeletePolicy names the ValidatingAdmissionPolicy, and its binding,
// that refuses a hostPath PersistentVolume with reclaim policy Delete.
//
// kube-controller-manager's hostPath plugin deletes a released volume's
// path itself, with os.RemoveAll in its own process, when the path matches
// /tmp/.+ anywhere in it. On a real cluster that process runs on a
// control-plane node; podtrace runs it on the user's machine, where the
// simulated nodes' host paths are not (they live under DATA_DIR/host/NODE).
// Left alone it would remove a directory of the machine running podtrace.
// The policy is upstream's own admission machinery, so `kubectl get
// validatingadmissionpolicies` shows it and a refusal reads as any
// policy's does.
const HostPathDeletePolicy = "podtrace.dev-hostpath-reclaim-delete"

// hostPathDeleteMessage is what a refused request is told.
const hostPathDeleteMessage = "podtrace: a hostPath PersistentVolume may not have persistentVolumeReclaimPolicy Delete here: " +
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
				WithExpression("!has(object.spec.hostPath) || object.spec.persistentVolumeReclaimPolicy != 'Delete'").
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
