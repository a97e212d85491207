package lanes

import (
	"time"

	"github.com/podtrace/podtrace/stages"
)

// count keeps the phase counts: a pod counts under its phase unless it was
// never created.
func (s *Store) count(l *Lane) {
	want := l.Phase
	if l.Denied {
		want = ""
	}
	if want == l.counted {
		return
	}
	if l.counted != "" {
		s.phases[l.counted]--
		if s.phases[l.counted] == 0 {
			delete(s.phases, l.counted)
		}
	}
	if want != "" {
		s.phases[want]++
	}
	l.counted = want
}

// apiStages are the stages of the API request that creates an object.
var apiStages = [...]stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}

// deniedCreate reports whether the pod's create was refused: an API stage
// failed and persist never succeeded, and nothing after the API stages
// happened to it.
func deniedCreate(l *Lane) bool {
	if l.Cells[stages.Persist.Index()].State == Done {
		return false
	}
	failed := false
	for _, id := range apiStages {
		if l.Cells[id.Index()].State == Failed {
			failed = true
		}
	}
	if !failed {
		return false
	}
	for _, id := range stages.Lifecycle[stages.Schedule.Index():] {
		if l.Cells[id.Index()].State != NotReached {
			return false
		}
	}
	return true
}

// settle keeps a pod's cells true to what the event implies for the others:
// a deleted pod retries nothing more; a restarted or crash-looping
// container is not ready.
func settle(l *Lane, e stages.Event) {
	switch e.Stage {
	case stages.Terminate, stages.Cleanup, stages.Delete:
		for i := range stages.Lifecycle {
			if c := &l.Cells[i]; c.State == Retrying {
				c.State, c.NextTry = Failed, time.Time{}
			}
		}
	}
	start, ready := &l.Cells[stages.Start.Index()], &l.Cells[stages.Ready.Index()]
	restarted := e.Stage == stages.Start && e.Status == stages.Started && ready.State == Done && !ready.End.After(e.Time)
	if restarted || start.State == Retrying || start.State == Failed {
		if ready.State == Done || ready.State == InProgress {
			*ready = Cell{}
		}
	}
}

// Restarts is kubectl's RESTARTS for the pod: the object's, else its
// container's start attempts less the first.
func (l *Lane) Restarts() int {
	if l.Object != nil {
		return objectRestarts(l.Object)
	}
	return max(0, l.Cells[stages.Start.Index()].Attempt-1)
}

// status is kubectl's STATUS column and the pod phase: the object's when
// the source sends rows, else derived from the cells.
func status(l *Lane) (string, string) {
	if l.Object != nil {
		return objectStatus(l)
	}
	c := func(id stages.ID) *Cell { return &l.Cells[id.Index()] }
	switch {
	case l.Deleted:
		return "Deleted", "Deleted"
	case c(stages.Terminate).State != NotReached || c(stages.Cleanup).State != NotReached || c(stages.Delete).State != NotReached:
		return "Terminating", "Terminating"
	}
	if l.Kind != stages.KindPod {
		for _, id := range []stages.ID{stages.Reconcile, stages.Persist, stages.Admission, stages.Authz, stages.Authn} {
			if cc := c(id); cc.State == Failed || cc.State == Retrying {
				return reasonOr(cc.Reason, "Failed"), "Failed"
			}
		}
		if c(stages.Reconcile).State == Done {
			return "Reconciled", "Reconciled"
		}
		return "Pending", "Pending"
	}
	// The most recent problem names the status, as the container's current
	// waiting reason does in kubectl (a crash reports on ready, then start).
	if worst := l.Problem(); worst >= 0 {
		id, cc := stages.Lifecycle[worst], &l.Cells[worst]
		switch {
		case !stages.Bind.Before(id), id == stages.Kubelet && cc.State == Waiting:
			// Until the kubelet syncs the pod, kubectl says Pending.
			return "Pending", "Pending"
		case cc.State == Waiting:
			return "ContainerCreating", podPhaseAfterBind(l)
		}
		return waitingReason(id, cc), podPhaseAfterBind(l)
	}
	switch {
	case c(stages.Ready).State == Done:
		return "Running", "Running"
	case c(stages.Start).State == Done:
		return "Running", "Running"
	case c(stages.Kubelet).State != NotReached:
		return "ContainerCreating", "Pending"
	}
	return "Pending", "Pending"
}

func podPhaseAfterBind(l *Lane) string {
	if l.Cells[stages.Start.Index()].State == Done {
		return "Running"
	}
	return "Pending"
}

// containerReasons are waiting reasons kubectl shows as the pod's STATUS.
var containerReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true, "PostStartHookError": true, "ContainerCreating": true, "Error": true,
	"OOMKilled": true, "Completed": true,
}

// waitingReason is the container waiting reason kubectl shows for a failing stage.
func waitingReason(id stages.ID, c *Cell) string {
	if containerReasons[c.Reason] {
		return c.Reason
	}
	switch id {
	case stages.Pull:
		if c.State == Retrying && c.Attempt > 1 {
			return "ImagePullBackOff"
		}
		return "ErrImagePull"
	case stages.Start:
		if c.State == Retrying {
			return "CrashLoopBackOff"
		}
		return "Error"
	case stages.Create:
		return "CreateContainerError"
	case stages.Sandbox, stages.CNI, stages.Kubelet:
		return "ContainerCreating"
	case stages.Ready:
		if c.Reason == "ContainerExited" {
			return "Error"
		}
		return "Running"
	case stages.Hooks:
		return "PostStartHookError"
	}
	return reasonOr(c.Reason, "Error")
}

func reasonOr(r, def string) string {
	if r != "" {
		return r
	}
	return def
}
