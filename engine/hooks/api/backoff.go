package api

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
)

// controllerBackoff follows the workqueue back-off of each
// kube-controller-manager controller that creates objects: its own rate
// limiter, upstream's DefaultTypedControllerRateLimiter (5 ms doubling to
// 16m40s per key, with a 10 qps bucket), fed as the controller feeds it. A
// refused create fails the controller's sync of the owner, which requeues it
// rate-limited; a create that goes through ends the failures (Forget). So
// the next try it tells is when the controller tries again, unless an
// update of the owner or its pods queues it sooner.
type controllerBackoff struct {
	mu       sync.Mutex
	limiters map[string]workqueue.TypedRateLimiter[string] // by controller
}

// refused notes a refused create of controller's for owner ("ns/name") at
// now and returns when the controller tries again.
func (b *controllerBackoff) refused(controller, owner string, now time.Time) time.Time {
	return now.Add(b.limiter(controller).When(owner))
}

// refusedBefore reports whether a create of controller's was ever refused
// (only then does a create that goes through have failures to forget).
func (b *controllerBackoff) refusedBefore(controller string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.limiters[controller]
	return ok
}

// created notes a create that went through: the sync can succeed.
func (b *controllerBackoff) created(controller, owner string) { b.limiter(controller).Forget(owner) }

func (b *controllerBackoff) limiter(controller string) workqueue.TypedRateLimiter[string] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limiters == nil {
		b.limiters = map[string]workqueue.TypedRateLimiter[string]{}
	}
	l, ok := b.limiters[controller]
	if !ok {
		l = workqueue.DefaultTypedControllerRateLimiter[string]()
		b.limiters[controller] = l
	}
	return l
}

// ownerFromBody returns the controlling owner of the object in a create's
// body as its controller's workqueue keys it ("namespace/name"), or "".
func ownerFromBody(body []byte, namespace string) string {
	m := metaFromBody(body)
	if m == nil {
		return ""
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil {
		return ""
	}
	return namespace + "/" + ref.Name
}
