package trace

import (
	"sync"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// lastEnds remembers, for each pod, when a stage other than ready last
// ended: where the ready stage of a pod begins (ReadySince). It only
// records; nothing waits on it.
type lastEnds struct {
	mu   sync.Mutex
	pods map[string]time.Time
}

func newLastEnds() *lastEnds { return &lastEnds{pods: map[string]time.Time{}} }

// record notes the end of a pod's stage; a pod whose deletion ended is forgotten.
func (l *lastEnds) record(e stages.Event) {
	if e.Kind != stages.KindPod || !e.Status.Terminal() || e.Stage == stages.Ready {
		return
	}
	key := e.Key()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case e.Stage == stages.Delete:
		delete(l.pods, key)
	case e.Time.After(l.pods[key]):
		l.pods[key] = e.Time
	}
}

// get is when a stage of the pod other than ready last ended (zero if none).
func (l *lastEnds) get(key string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pods[key]
}
