package dynamicresources

import (
	"context"
	"testing"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func TestPostFilter(t *testing.T) {
	s := Plugin{}.PostFilter(context.Background(), nil, nil, nil)
	if s.Code() != framework.Unschedulable || s.Message() != "no new claims to deallocate" {
		t.Fatalf("got %v %q", s.Code(), s.Message())
	}
}
