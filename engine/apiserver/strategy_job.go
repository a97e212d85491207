package apiserver

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// generateJobSelector is the job strategy's generateSelectorIfNeeded: unless
// spec.manualSelector, the template gets the job-name and controller-uid
// labels (legacy and batch.kubernetes.io/ forms) the user did not set, and
// the selector matches batch.kubernetes.io/controller-uid. A label the user
// set to another value is left for validation to reject. The Job's own
// labels then default to the template's (SetDefaults_Job, which runs after
// this here as when upstream reads the stored Job back).
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	generated := map[string]string{
		legacyJobNameLabel:         j.Name,
		batchv1.JobNameLabel:       j.Name,
		legacyControllerUIDLabel:   string(j.UID),
		batchv1.ControllerUidLabel: string(j.UID),
	}
	for k, v := range generated {
		if _, found := j.Spec.Template.Labels[k]; !found {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, found := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !found {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// The labels upstream's job strategy still sets beside the
// batch.kubernetes.io/ ones (pkg/apis/batch LegacyJobNameLabel and
// LegacyControllerUidLabel).
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)
