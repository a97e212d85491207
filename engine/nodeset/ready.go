package nodeset

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	nodeutil "k8s.io/kubernetes/pkg/util/node"
)

// WaitReady waits until every node of the set is Ready as client sees it
// (and, when also is set, also says yes to it), until ctx ends.
func (s *Set) WaitReady(ctx context.Context, client kubernetes.Interface, also func(*v1.Node) bool) error {
	want := map[string]bool{}
	for _, n := range s.cfg.Nodes {
		want[n.Name] = true
	}
	ready, start := 0, time.Now()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the API server may be starting or busy: ask again
		}
		ready = 0
		for i := range l.Items {
			n := &l.Items[i]
			if want[n.Name] && nodeutil.IsNodeReady(n) && (also == nil || also(n)) {
				ready++
			}
		}
		return ready == len(want), nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready after %s (%d of %d): %w", time.Since(start).Round(time.Second), ready, len(want), err)
	}
	return nil
}
