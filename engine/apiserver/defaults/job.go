package defaults

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
)

// Job applies SetDefaults_Job of batch/v1 (with the JobPodReplacementPolicy
// gate on, as in 1.36) and the pod template defaults: completions and
// parallelism 1 when both are unset, backoffLimit 6 (MaxInt32 with
// backoffLimitPerIndex), the template's labels as the Job's when it has
// none, completionMode NonIndexed, suspend and manualSelector false,
// podReplacementPolicy TerminatingOrFailed (Failed with a podFailurePolicy).
func Job(j *batchv1.Job) {
	s := &j.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = int32Ptr(1)
		s.Parallelism = int32Ptr(1)
	}
	if s.Parallelism == nil {
		s.Parallelism = int32Ptr(1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = int32Ptr(math.MaxInt32)
		} else {
			s.BackoffLimit = int32Ptr(6)
		}
	}
	if s.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = copyMap(s.Template.Labels)
	}
	if s.CompletionMode == nil {
		m := batchv1.NonIndexedCompletion
		s.CompletionMode = &m
	}
	if s.Suspend == nil {
		s.Suspend = boolPtr(false)
	}
	if s.PodReplacementPolicy == nil {
		p := batchv1.TerminatingOrFailed
		if s.PodFailurePolicy != nil {
			p = batchv1.Failed
		}
		s.PodReplacementPolicy = &p
	}
	if s.ManualSelector == nil {
		s.ManualSelector = boolPtr(false)
	}
	podTemplateSpec(&s.Template)
}

func boolPtr(b bool) *bool { return &b }

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
