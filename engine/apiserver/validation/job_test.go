package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
)

// job is a defaulted Job with the selector and labels the job strategy
// generates for UID u1.
func job(mutate func(*batchv1.Job)) *batchv1.Job {
	labels := map[string]string{"controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1",
		"job-name": "pi", "batch.kubernetes.io/job-name": "pi"}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "u1"},
		Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "pi", Image: "perl:5.34"}}}}}}
	if mutate != nil {
		mutate(j)
	}
	defaults.Default(j)
	return j
}

func TestJobValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string // "" for valid
	}{
		{"valid", nil, ""},
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		{"negative parallelism", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](-1) },
			"spec.parallelism: Invalid value: -1: must be greater than or equal to 0"},
		{"wrong generated label", func(j *batchv1.Job) { j.Spec.Template.Labels["job-name"] = "other" },
			"spec.template.metadata.labels[job-name]: Invalid value"},
		{"selector not generated", func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] = "u2"
		}, "spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"u2\"}}: `selector` not auto-generated"},
		{"indexed", func(j *batchv1.Job) {
			m := batchv1.IndexedCompletion
			j.Spec.CompletionMode, j.Spec.Completions = &m, ptr.To[int32](2)
		}, `spec.completionMode: Unsupported value: "Indexed": supported values: "NonIndexed"`},
		{"podFailurePolicy", func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{} },
			"spec.podFailurePolicy: Forbidden: not supported by podtrace's Job controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateCreate(job(tt.mutate))
			got := errs.ToAggregate()
			switch {
			case tt.want == "" && got != nil:
				t.Fatalf("unexpected errors: %v", got)
			case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
				t.Fatalf("errors %v, want one containing %q", got, tt.want)
			}
		})
	}
}

func TestJobUpdateTemplateImmutable(t *testing.T) {
	old := job(nil)
	j := old.DeepCopy()
	j.Spec.Template.Spec.Containers[0].Image = "perl:5.36"
	j.Spec.Parallelism = ptr.To[int32](3)
	errs := ValidateUpdate(j, old).ToAggregate()
	if errs == nil || !strings.Contains(errs.Error(), "spec.template: Invalid value") || strings.Contains(errs.Error(), "parallelism") {
		t.Fatalf("errors %v, want the template immutable and parallelism mutable", errs)
	}
}
