package scenario

import "testing"

// TestFixAnnotateIsAKubectlLine: the fixes that end with an annotation say
// it as the kubectl command a participant types.
func TestFixAnnotateIsAKubectlLine(t *testing.T) {
	for name, want := range map[string]string{
		"quota-exceeded": "kubectl annotate replicasets -n team -l app=shop quota-raised=true --overwrite",
		"rbac-forbidden": "kubectl annotate replicasets -l app=web rbac-restored=true --overwrite",
	} {
		s, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Fix.Annotate == nil {
			t.Fatalf("%s: the fix has no annotate step", name)
		}
		if got := s.Fix.Annotate.Kubectl(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// TestFixRestartIsAKubectlLine: a fix that replaces the pods says it as
// kubectl rollout restart.
func TestFixRestartIsAKubectlLine(t *testing.T) {
	s, err := Lookup("missing-configmap")
	if err != nil {
		t.Fatal(err)
	}
	if s.Fix.Restart == nil || s.Fix.Restart.Kubectl() != "kubectl rollout restart deployment/frontend" {
		t.Fatalf("restart step %+v", s.Fix.Restart)
	}
}
