package apiserver

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Job columns, as kube-apiserver 1.36's printJob makes them; the API
// server prints wide.
func init() {
	printers["Job"] = printer{columns: []metav1.TableColumnDefinition{colName,
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		colAge,
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return jobRow(o.(*batchv1.Job), now), nil
	}}
}

func jobRow(j *batchv1.Job, now time.Time) []interface{} {
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return []interface{}{j.Name, jobStatusCell(j), jobCompletionsCell(j), jobDurationCell(j, now),
		since(j.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
}

func jobCompletionsCell(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if p := j.Spec.Parallelism; p != nil && *p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDurationCell(j *batchv1.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
}

// jobStatusCell is printJob's STATUS: the first true condition of
// Complete, Failed, (deleting), Suspended, FailureTarget, SuccessCriteriaMet.
func jobStatusCell(j *batchv1.Job) string {
	switch {
	case jobCondition(j, batchv1.JobComplete):
		return "Complete"
	case jobCondition(j, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(j, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(j, batchv1.JobFailureTarget):
		return "FailureTarget"
	case jobCondition(j, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
