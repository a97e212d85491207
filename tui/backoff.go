package tui

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// ContainerWait is a container waiting to (re)start, as its status says.
type ContainerWait struct {
	Container, Reason, Message string
	// LastExit is when its previous run ended; zero when it never ran.
	LastExit time.Time
}

// Backoff is one wait on a back-off: whose it is, what it waits for, and
// when the next try comes (zero when not known).
type Backoff struct {
	Who, What string
	Next      time.Time
}

// The kubelet's own back-off numbers: its image pulls and its container
// restarts start at 10s and double (pkg/kubelet backOffPeriod); pulls stop
// doubling at 5m (MaxContainerBackOff). The crash loop's current period is
// in the waiting message ("back-off 20s restarting failed container=...").
const (
	kubeletBackoffStart   = 10 * time.Second
	kubeletPullBackoffMax = 5 * time.Minute
)

var crashBackoff = regexp.MustCompile(`back-off (\S+) restarting failed container`)

// Backoffs reads the kubelet's back-offs of the pod: a crash loop's from its
// waiting message and last exit, an image pull's from the count and time
// of its "Failed to pull image" Event (each failed pull doubles the wait).
func (d PodDetail) Backoffs() []Backoff {
	var out []Backoff
	for _, w := range d.Waiting {
		switch w.Reason {
		case "CrashLoopBackOff":
			b := Backoff{Who: "the kubelet's crash-loop back-off", What: "restart of container " + w.Container}
			if m := crashBackoff.FindStringSubmatch(w.Message); m != nil && !w.LastExit.IsZero() {
				if p, err := time.ParseDuration(m[1]); err == nil {
					b.Next = w.LastExit.Add(p)
					b.Who += " (" + m[1] + " after the last exit)"
				}
			}
			out = append(out, b)
		case "ImagePullBackOff", "ErrImagePull":
			b := Backoff{Who: "the kubelet's image-pull back-off", What: "pull for container " + w.Container}
			for _, e := range d.Events {
				if e.Reason == "Failed" && strings.HasPrefix(e.Message, "Failed to pull image") && e.Count > 0 && !e.LastSeen.IsZero() {
					wait := min(kubeletBackoffStart<<min(e.Count-1, 10), kubeletPullBackoffMax)
					b.Next = e.LastSeen.Add(wait)
					b.Who += fmt.Sprintf(" (%s after failed pull %d)", duration.HumanDuration(wait), e.Count)
				}
			}
			out = append(out, b)
		}
	}
	return out
}

// String says the wait in one line: "next restart of container worker in
// 12s: the kubelet's crash-loop back-off (20s after the last exit)".
func (b Backoff) String(now time.Time) string {
	when := "when it ends"
	switch {
	case b.Next.IsZero():
	case b.Next.After(now):
		when = "in " + duration.HumanDuration(b.Next.Sub(now))
	default:
		when = "due now"
	}
	return "next " + b.What + " " + when + ": " + b.Who
}

// ControllerBackoff says when an owner's controller tries a refused create
// again, from the end of its workqueue back-off.
func ControllerBackoff(controller string, next, now time.Time) string {
	if controller == "" {
		controller = "the controller"
	}
	when := "due now"
	if next.After(now) {
		when = "in " + duration.HumanDuration(next.Sub(now)) + ", at " + next.Format("15:04:05")
	}
	return when + ": " + controller + "'s workqueue back-off (5ms, doubling with each refused create, up to 16m40s); " +
		"an update of the owner or its pods (> here, or kubectl annotate) makes it sync now"
}

// schedulerRetryMax is kube-scheduler's DefaultPodMaxInUnschedulablePodsDuration:
// a pod that no cluster event moved back to its active queue is retried
// once it has waited that long among the unschedulable pods.
const schedulerRetryMax = 5 * time.Minute

// SchedulerWait says when kube-scheduler tries an unschedulable pod again,
// its last attempt at last.
func SchedulerWait(last, now time.Time) string {
	when := "else 5m after the last attempt"
	if at := last.Add(schedulerRetryMax); !last.IsZero() && at.After(now) {
		when = "else in " + duration.HumanDuration(at.Sub(now)) + " (" + at.Format("15:04:05") + ")"
	}
	return "on a cluster change that may let it fit, " + when + ": kube-scheduler's unschedulable queue; > retries now"
}
