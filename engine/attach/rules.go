package attach

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletevents "k8s.io/kubernetes/pkg/kubelet/events"

	"github.com/podtrace/podtrace/stages"
)

// Components named in the events a real cluster yields.
const (
	apiserver  = "kube-apiserver"
	scheduler  = "default-scheduler"
	kubeletC   = "kubelet"
	rsCtrl     = "replicaset-controller"
	deployCtrl = "deployment-controller"
)

// Resolution is the precision of the timestamps a real cluster exposes
// (creationTimestamp, condition transitions, core/v1 Event times).
const Resolution = time.Second

// Unobservable lists the stages attach cannot see from outside a cluster:
// the API server's authn, authz and admission (unless an audit log is read)
// and the cleanup of a deleted pod, which leaves no trace in the API.
func Unobservable(auditLog bool) []stages.ID {
	if auditLog {
		return []stages.ID{stages.Cleanup}
	}
	return []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Cleanup}
}

// item is one stage event with the key that makes it happen once.
type item struct {
	key string
	ev  stages.Event
}

// objectEvent returns the persist (and, for owned objects, reconcile)
// events that an object's metadata proves: creationTimestamp is when the
// API server wrote it, managedFields name the client that did.
func objectEvent(kind string, m *metav1.ObjectMeta) []item {
	base := stages.Event{Kind: kind, Namespace: m.Namespace, Pod: m.Name, UID: string(m.UID),
		Time: m.CreationTimestamp.Time}
	persist := base
	persist.Stage, persist.Status, persist.Component, persist.Verb = stages.Persist, stages.Succeeded, apiserver, "create"
	if len(m.ManagedFields) > 0 {
		persist.UserAgent = m.ManagedFields[0].Manager
	}
	out := []item{{"persist|", persist}}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && kind == stages.KindPod && ref.Kind == "ReplicaSet" {
		// The ReplicaSet controller created the pod; its event says so in these words.
		rec := base
		rec.Stage, rec.Status, rec.Component = stages.Reconcile, stages.Succeeded, rsCtrl
		rec.Reason, rec.Message = "SuccessfulCreate", "Created pod: "+m.Name
		out = append(out, item{"reconcile|", rec})
	}
	return out
}

// podItems derives the stage events a pod's status proves.
func podItems(p *v1.Pod) []item {
	out := objectEvent(stages.KindPod, &p.ObjectMeta)
	base := stages.Event{Kind: stages.KindPod, Namespace: p.Namespace, Pod: p.Name, UID: string(p.UID), Node: p.Spec.NodeName}
	at := func(stage stages.ID, comp string, t time.Time, reason, msg string) stages.Event {
		e := base
		e.Stage, e.Status, e.Component, e.Time, e.Reason, e.Message = stage, stages.Succeeded, comp, t, reason, msg
		return e
	}
	if c := condition(p, v1.PodScheduled); c != nil && c.Status == v1.ConditionTrue && p.Spec.NodeName != "" {
		t := c.LastTransitionTime.Time
		out = append(out, item{"schedule|", at(stages.Schedule, scheduler, t, "", "")},
			item{"bind|", at(stages.Bind, scheduler, t, "Scheduled",
				"Successfully assigned "+p.Namespace+"/"+p.Name+" to "+p.Spec.NodeName)})
	}
	if p.Status.StartTime != nil {
		// status.startTime is when the kubelet acknowledged the pod.
		out = append(out, item{"kubelet|", at(stages.Kubelet, kubeletC, p.Status.StartTime.Time, "", "")})
	}
	if c := condition(p, v1.PodReadyToStartContainers); c != nil && c.Status == v1.ConditionTrue {
		t := c.LastTransitionTime.Time
		out = append(out, item{"sandbox|", at(stages.Sandbox, kubeletC, t, "", "")},
			item{"cni|", at(stages.CNI, kubeletC, t, "", "")})
	}
	hooks := map[string]bool{}
	for _, c := range p.Spec.Containers {
		hooks[c.Name] = c.Lifecycle != nil && c.Lifecycle.PostStart != nil
	}
	statuses := append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		_, regular := hooks[cs.Name]
		// The current instance is attempt restartCount+1, the one before it restartCount.
		var started time.Time
		n := int(cs.RestartCount) + 1
		if r := cs.State.Running; r != nil {
			started = r.StartedAt.Time
		} else if t := cs.State.Terminated; t != nil && !t.StartedAt.IsZero() {
			started = t.StartedAt.Time
		} else if t := cs.LastTerminationState.Terminated; t != nil && !t.StartedAt.IsZero() {
			started, n = t.StartedAt.Time, int(cs.RestartCount)
		}
		if started.IsZero() {
			// Waiting reasons (CrashLoopBackOff, ...) come with their own Events.
			continue
		}
		for _, st := range []stages.ID{stages.Pull, stages.Create, stages.Start} {
			e := at(st, kubeletC, started, "", "")
			e.Container = cs.Name
			if n > 1 {
				e.Attempt = n
			}
			out = append(out, item{attemptKey(st, cs.Name, n), e})
		}
		if regular && !hooks[cs.Name] {
			e := at(stages.Hooks, kubeletC, started, "", "no postStart hook")
			e.Container = cs.Name
			out = append(out, item{"hooks|" + cs.Name, e})
		}
		if regular && cs.Ready {
			if hooks[cs.Name] {
				e := at(stages.Hooks, kubeletC, started, "", "")
				e.Container = cs.Name
				out = append(out, item{"hooks|" + cs.Name, e})
			}
		}
	}
	if c := condition(p, v1.PodReady); c != nil && c.Status == v1.ConditionTrue {
		out = append(out, item{"ready|", at(stages.Ready, kubeletC, c.LastTransitionTime.Time, "", "")})
	}
	return out
}

func condition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// containerField matches an event's involvedObject.fieldPath.
var containerField = regexp.MustCompile(`^spec\.(?:initContainers|containers|ephemeralContainers)\{(.+)\}$`)

// pulledIn reads the pull time kubelet puts in its Pulled message.
var pulledIn = regexp.MustCompile(`^Successfully pulled image ".*" in ([0-9.a-zµ]+) \(`)

// startFailure tells StartContainer's errors from CreateContainer's: the
// kubelet reports both as Failed "Error: ...", but only a start goes as far
// as the runtime's task and the OCI runtime.
var startFailure = regexp.MustCompile(`(?i)containerd task|OCI runtime|start container|starting container|RunContainerError`)

// scaledRS reads the ReplicaSet name from the Deployment controller's message.
var scaledRS = regexp.MustCompile(`^Scaled (?:up|down) replica set (\S+) from \d+ to \d+$`)

// eventItems maps one core/v1 Event to the stage events it proves, by the
// upstream reasons: Scheduled and FailedScheduling (schedule, bind),
// FailedCreatePodSandBox (sandbox, cni), Pulling, Pulled, Failed, BackOff
// (pull, or start for a crash loop), Created, Started, FailedPostStartHook,
// Unhealthy, Killing, and the controllers' SuccessfulCreate, FailedCreate
// and ScalingReplicaSet on ReplicaSet and Deployment lanes.
func eventItems(ev *v1.Event) []item {
	io := ev.InvolvedObject
	n := EventCount(ev)
	e := stages.Event{Kind: io.Kind, Namespace: io.Namespace, Pod: io.Name, UID: string(io.UID),
		Time: EventTime(ev), Reason: ev.Reason, Message: ev.Message, Node: ev.Source.Host, Attempt: n}
	if m := containerField.FindStringSubmatch(io.FieldPath); m != nil {
		e.Container = m[1]
	}
	repeat := ev.Reason + "|" + e.Container + "|" + ev.Name + "|" + strconv.Itoa(n)
	set := func(stage stages.ID, status stages.Status, comp string) []item {
		e.Stage, e.Status, e.Component = stage, status, comp
		// The n-th Pulled, Created or Started is the container's n-th
		// instance: the same key as the pod status gives it.
		key := attemptKey(stage, e.Container, n)
		switch status {
		case stages.Retrying, stages.Failed:
			key = string(stage) + "|" + repeat
		case stages.Started:
			key += "|started"
		}
		if status != stages.Retrying && status != stages.Failed && n == 1 {
			e.Attempt = 0
		}
		return []item{{key, e}}
	}
	switch io.Kind {
	case stages.KindReplicaSet:
		switch ev.Reason {
		case "FailedCreate":
			return set(stages.Reconcile, stages.Retrying, rsCtrl)
		}
		// SuccessfulCreate: the pod's own lane shows it, from its owner reference.
		return nil
	case stages.KindDeployment:
		if m := scaledRS.FindStringSubmatch(ev.Message); m != nil && ev.Reason == "ScalingReplicaSet" {
			e.Kind, e.Pod, e.UID, e.Stage, e.Status, e.Component, e.Attempt =
				stages.KindReplicaSet, m[1], "", stages.Reconcile, stages.Succeeded, deployCtrl, 0
			return []item{{"reconcile|" + ev.Message, e}}
		}
		return nil
	case stages.KindPod:
	default:
		return nil
	}
	switch ev.Reason {
	case "Scheduled":
		e.Node = ""
		if _, node, ok := strings.Cut(ev.Message, " to "); ok {
			e.Node = node
		}
		return set(stages.Bind, stages.Succeeded, scheduler)
	case "FailedScheduling":
		e.Node = ""
		return set(stages.Schedule, stages.Retrying, scheduler)
	case kubeletevents.FailedCreatePodSandBox:
		if strings.Contains(ev.Message, "network") {
			return set(stages.CNI, stages.Retrying, kubeletC)
		}
		return set(stages.Sandbox, stages.Retrying, kubeletC)
	case kubeletevents.PullingImage:
		return set(stages.Pull, stages.Started, kubeletC)
	case kubeletevents.PulledImage:
		out := set(stages.Pull, stages.Succeeded, kubeletC)
		if m := pulledIn.FindStringSubmatch(ev.Message); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil {
				// The kubelet measured the pull itself; its figure is finer than the timestamps.
				out[0].ev.DurationMs = float64(d) / float64(time.Millisecond)
			}
		}
		return out
	case kubeletevents.FailedToPullImage: // also FailedToCreateContainer and FailedToStartContainer
		if strings.Contains(ev.Message, "pull") || strings.Contains(ev.Message, "ErrImage") ||
			strings.Contains(ev.Message, "ImagePull") || strings.Contains(ev.Message, "InvalidImageName") {
			return set(stages.Pull, stages.Retrying, kubeletC)
		}
		if startFailure.MatchString(ev.Message) {
			return set(stages.Start, stages.Retrying, kubeletC)
		}
		return set(stages.Create, stages.Retrying, kubeletC)
	case kubeletevents.BackOffStartContainer: // also BackOffPullImage
		if strings.HasPrefix(ev.Message, "Back-off pulling image") {
			return set(stages.Pull, stages.Retrying, kubeletC)
		}
		return set(stages.Start, stages.Retrying, kubeletC)
	case kubeletevents.CreatedContainer:
		return set(stages.Create, stages.Succeeded, kubeletC)
	case kubeletevents.StartedContainer:
		return set(stages.Start, stages.Succeeded, kubeletC)
	case kubeletevents.FailedPostStartHook:
		return set(stages.Hooks, stages.Failed, kubeletC)
	case kubeletevents.ContainerUnhealthy:
		return set(stages.Ready, stages.Retrying, kubeletC)
	case kubeletevents.KillingContainer:
		return set(stages.Terminate, stages.Started, kubeletC)
	case kubeletevents.FailedMountVolume:
		return set(stages.Kubelet, stages.Retrying, kubeletC)
	}
	return nil
}

// attemptKey names the n-th instance of a per-container stage.
func attemptKey(stage stages.ID, container string, n int) string {
	k := string(stage) + "|" + container
	if n > 1 {
		k += "|#" + strconv.Itoa(n)
	}
	return k
}
