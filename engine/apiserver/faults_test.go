package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/stages"
)

// TestAPIStageFaults injects each API stage's fault, sees the error a client
// gets and the failed stage event, removes it and sees the write succeed.
func TestAPIStageFaults(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	tests := []struct {
		fault string
		check func(error) bool
		want  string
	}{
		{"authn:fail", apierrors.IsUnauthorized, "Unauthorized"},
		{"authz:fail", apierrors.IsForbidden, `pods is forbidden: User "kubernetes-admin" cannot create resource "pods" in API group "" in the namespace "default"`},
		{"admission:fail", apierrors.IsBadRequest, `admission webhook "deny.podtrace.dev" denied the request`},
		{"admission:fail:quota", apierrors.IsForbidden, "exceeded quota"},
		{"persist:fail", apierrors.IsTimeout, "etcdserver: request timed out"},
	}
	for i, tt := range tests {
		f, err := stages.ParseFault(tt.fault)
		if err != nil {
			t.Fatal(err)
		}
		added := env.Tracer.Faults.Add(f)
		name := "p" + string(rune('a'+i))
		_, err = env.Admin().CoreV1().Pods("default").Create(ctx, pod(name), metav1.CreateOptions{})
		if !tt.check(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: create error %v, want %q", tt.fault, err, tt.want)
		}
		failed := func() bool { // the hub delivers events asynchronously
			for _, e := range env.Events() {
				if e.Pod == name && e.Stage == f.Stage && e.Status == stages.Failed {
					return true
				}
			}
			return false
		}
		enginetest.WaitFor(t, 5*time.Second, fmt.Sprintf("%s: a failed %s event for %s", tt.fault, f.Stage, name), failed)
		env.Tracer.Faults.Remove(added.ID)
		if _, err := env.Admin().CoreV1().Pods("default").Create(ctx, pod(name), metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: after removing the fault: %v", tt.fault, err)
		}
	}
}
