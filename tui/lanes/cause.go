package lanes

import (
	"strings"

	"github.com/podtrace/podtrace/stages"
)

// Problem returns the index (in stages.Lifecycle) of the lane's failing,
// retrying or held stage — the latest one, which names kubectl's STATUS —
// or -1 when nothing is wrong.
func (l *Lane) Problem() int {
	worst := -1
	for i := range stages.Lifecycle {
		switch l.Cells[i].State {
		case Failed, Retrying, Waiting:
			if worst < 0 || !l.Cells[i].Last.Time.Before(l.Cells[worst].Last.Time) {
				worst = i
			}
		}
	}
	return worst
}

// Failing reports whether the lane has a cause to show: a problem stage,
// or (for an owner) a refused create of one of its pods.
func (l *Lane) Failing() bool {
	return (l.Problem() >= 0 && !l.Deleted) || l.DeniedReason != ""
}

// Focus returns the index of the stage a reader wants to see first: the
// problem stage, else (for an owner whose pod's create was refused) its
// reconcile stage, where the refusal is told, else the latest stage in
// progress, else -1.
func (l *Lane) Focus() int {
	if p := l.Problem(); p >= 0 {
		return p
	}
	if l.DeniedReason != "" {
		return stages.Reconcile.Index()
	}
	latest := -1
	for i := range stages.Lifecycle {
		if l.Cells[i].State == InProgress && (latest < 0 || !l.Cells[i].Start.Before(l.Cells[latest].Start)) {
			latest = i
		}
	}
	return latest
}

// Cause is the lane's current problem in upstream's words, for a row: the
// reason (unless STATUS already says it, or it says nothing, like "Failed")
// and the informative start of the message, e.g. `FailedScheduling: 3
// Insufficient cpu` or `FailedMount: configmap "x" not found`. Empty when
// the lane is neither failing, retrying nor held.
func (l *Lane) Cause() (reason, message string) {
	p := l.Problem()
	if p < 0 && l.DeniedReason != "" {
		return l.DeniedReason, CoreMessage(l.DeniedReason, l.DeniedMessage)
	}
	if p < 0 || l.Deleted {
		return "", ""
	}
	c := &l.Cells[p]
	reason = c.Reason
	if reason == l.Status || reason == "Failed" || reason == "Error" {
		reason = ""
	}
	return reason, CoreMessage(c.Reason, c.Message)
}

// CoreMessage drops the parts of an upstream message that every instance
// shares, keeping its words: the scheduler's "0/3 nodes are available: "
// and preemption tail, the kubelet's "MountVolume.SetUp failed for volume
// "v" : ", a gRPC error's "rpc error: code = X desc = ".
func CoreMessage(reason, msg string) string {
	msg = strings.TrimSpace(msg)
	if _, after, ok := strings.Cut(msg, " nodes are available: "); ok && strings.HasPrefix(msg, "0/") {
		msg = after
		if i := strings.Index(msg, " preemption: "); i >= 0 {
			msg = msg[:i]
		}
		msg = strings.TrimSuffix(msg, ".")
	}
	if strings.HasPrefix(msg, "MountVolume.") {
		if i := strings.Index(msg, " : "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	if i := strings.Index(msg, "rpc error: code = "); i >= 0 {
		if j := strings.Index(msg[i:], " desc = "); j >= 0 {
			msg = msg[:i] + msg[i+j+len(" desc = "):]
		}
	}
	if reason == "Breakpoint" {
		msg, _, _ = strings.Cut(msg, ":")
	}
	return msg
}
