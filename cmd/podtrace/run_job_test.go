package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podtrace/podtrace/engine/apply"
)

// TestExpectedPodsCountsJobCompletions checks that run --headless waits for
// a Job's completions (1 when unset) to succeed.
func TestExpectedPodsCountsJobCompletions(t *testing.T) {
	job := func(spec map[string]interface{}) apply.Object {
		return apply.Object{Unstructured: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]interface{}{"name": "j", "namespace": "batch"},
			"spec": spec}}}
	}
	n, namespaces := expectedPods([]apply.Object{job(map[string]interface{}{"completions": int64(3), "parallelism": int64(2)}),
		job(map[string]interface{}{"parallelism": int64(2)})})
	if n != 4 || len(namespaces) != 1 || namespaces[0] != "batch" {
		t.Fatalf("expectedPods = %d %v, want 4 [batch]", n, namespaces)
	}
}
