package defaults

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJobDefaults(t *testing.T) {
	tests := []struct {
		name                             string
		completions, parallelism         *int32
		wantCompletions, wantParallelism *int32
		perIndex                         bool
		wantBackoffLimit                 int32
	}{
		{name: "both unset", wantCompletions: int32Ptr(1), wantParallelism: int32Ptr(1), wantBackoffLimit: 6},
		{name: "completions only", completions: int32Ptr(5), wantCompletions: int32Ptr(5), wantParallelism: int32Ptr(1), wantBackoffLimit: 6},
		{name: "parallelism only", parallelism: int32Ptr(3), wantParallelism: int32Ptr(3), wantBackoffLimit: 6},
		{name: "backoff per index", perIndex: true, wantCompletions: int32Ptr(1), wantParallelism: int32Ptr(1), wantBackoffLimit: 2147483647},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: batchv1.JobSpec{Completions: tt.completions, Parallelism: tt.parallelism,
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pi"}}}}}
			if tt.perIndex {
				j.Spec.BackoffLimitPerIndex = int32Ptr(1)
			}
			Job(j)
			s := j.Spec
			if !sameInt32(s.Completions, tt.wantCompletions) || !sameInt32(s.Parallelism, tt.wantParallelism) || *s.BackoffLimit != tt.wantBackoffLimit {
				t.Errorf("completions %v parallelism %v backoffLimit %d", s.Completions, s.Parallelism, *s.BackoffLimit)
			}
			if *s.CompletionMode != batchv1.NonIndexedCompletion || *s.Suspend || *s.ManualSelector ||
				*s.PodReplacementPolicy != batchv1.TerminatingOrFailed || j.Labels["app"] != "pi" ||
				s.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
				t.Errorf("spec %+v labels %v", s, j.Labels)
			}
		})
	}
}

func sameInt32(a, b *int32) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
