package apiserver

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
)

// TestGenerateJobSelector checks the job strategy's generated selector and
// template labels, and the Job's labels defaulted from them afterwards.
func TestGenerateJobSelector(t *testing.T) {
	tests := []struct {
		name         string
		manual       *bool
		template     map[string]string
		wantSelector string
		wantTemplate map[string]string
	}{
		{name: "generated", wantSelector: "batch.kubernetes.io/controller-uid=u1",
			wantTemplate: map[string]string{"batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
				"batch.kubernetes.io/job-name": "pi", "job-name": "pi"}},
		{name: "user labels kept", template: map[string]string{"app": "pi", "job-name": "other"},
			wantSelector: "batch.kubernetes.io/controller-uid=u1",
			wantTemplate: map[string]string{"app": "pi", "batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
				"batch.kubernetes.io/job-name": "pi", "job-name": "other"}},
		{name: "manual selector", manual: ptrBool(true), template: map[string]string{"app": "pi"},
			wantSelector: "app=pi", wantTemplate: map[string]string{"app": "pi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: types.UID("u1")},
				Spec: batchv1.JobSpec{ManualSelector: tt.manual, Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: tt.template}}}}
			if tt.manual != nil {
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			}
			generateJobSelector(j)
			defaults.Job(j)
			if got := metav1.FormatLabelSelector(j.Spec.Selector); got != tt.wantSelector {
				t.Errorf("selector %s, want %s", got, tt.wantSelector)
			}
			if !equalMaps(j.Spec.Template.Labels, tt.wantTemplate) || !equalMaps(j.Labels, tt.wantTemplate) {
				t.Errorf("template labels %v, job labels %v, want both %v", j.Spec.Template.Labels, j.Labels, tt.wantTemplate)
			}
		})
	}
}

func ptrBool(b bool) *bool { return &b }

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestJobRow checks STATUS, COMPLETIONS and DURATION as kubectl get jobs
// prints them, and the wide columns.
func TestJobRow(t *testing.T) {
	now := time.Now()
	start, end := metav1.NewTime(now.Add(-90*time.Second)), metav1.NewTime(now.Add(-30*time.Second))
	cond := func(t batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
	}
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{"running", func(j *batchv1.Job) { j.Status.StartTime = &start }, "pi|Running|0/3|90s"},
		{"complete", func(j *batchv1.Job) {
			j.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &end, Succeeded: 3, Conditions: cond(batchv1.JobComplete)}
		}, "pi|Complete|3/3|60s"},
		{"failed", func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobFailed) }, "pi|Failed|0/3|"},
		{"suspended", func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobSuspended) }, "pi|Suspended|0/3|"},
		{"no completions", func(j *batchv1.Job) { j.Spec.Completions = nil }, "pi|Running|0/1 of 2|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))},
				Spec: batchv1.JobSpec{Completions: int32p(3), Parallelism: int32p(2),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pi", Image: "perl:5.34"}}}}}}
			tt.mutate(j)
			row := jobRow(j, now)
			var cells []string
			for _, c := range row[:4] {
				cells = append(cells, c.(string))
			}
			if got := strings.Join(cells, "|"); got != tt.want {
				t.Errorf("cells %s, want %s", got, tt.want)
			}
			if row[4] != "2m" || row[5] != "pi" || row[6] != "perl:5.34" || row[7] != "batch.kubernetes.io/controller-uid=u1" {
				t.Errorf("age and wide cells %v", row[4:])
			}
		})
	}
}

func int32p(v int32) *int32 { return &v }
