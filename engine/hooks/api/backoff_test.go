package api

import (
	"testing"
	"time"
)

// TestControllerBackoffDoublesUntilACreateGoesThrough: each refused create
// of an owner's pods doubles the controller's wait, from 5ms, as its
// workqueue does; a create that goes through starts it again.
func TestControllerBackoffDoublesUntilACreateGoesThrough(t *testing.T) {
	var b controllerBackoff
	now := time.Unix(0, 0)
	for i, want := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		if got := b.refused("replicaset-controller", "team/shop-1", now).Sub(now); got != want {
			t.Errorf("refusal %d: next try after %s, want %s", i+1, got, want)
		}
	}
	if got := b.refused("replicaset-controller", "team/other", now).Sub(now); got != 5*time.Millisecond {
		t.Errorf("another owner waits %s, want 5ms", got)
	}
	b.created("replicaset-controller", "team/shop-1")
	if got := b.refused("replicaset-controller", "team/shop-1", now).Sub(now); got != 5*time.Millisecond {
		t.Errorf("after a create went through: %s, want 5ms", got)
	}
}
