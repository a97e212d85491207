// Package stages is podtrace's vocabulary: the stages a pod passes through
// between `kubectl apply` and a running container, the events that report
// them, and the faults that break them. It imports only the standard library
// so that the engine, the terminal UI and every event Source can share it.
package stages

import (
	"fmt"
	"strings"
)

// ID names one stage of a pod's life. Its string form is what appears in the
// JSON event stream and on the command line.
type ID string

// The stages of a pod's way up, in lifecycle order.
const (
	Authn     ID = "authn"     // apiserver: who is asking
	Authz     ID = "authz"     // apiserver: may they (RBAC)
	Admission ID = "admission" // apiserver: mutating and validating admission, then validation
	Persist   ID = "persist"   // apiserver → etcd: the write under /registry/...
	Reconcile ID = "reconcile" // controllers: Deployment → ReplicaSet → Pod
	Schedule  ID = "schedule"  // scheduler: queue, filter, score, pick
	Bind      ID = "bind"      // scheduler → apiserver: pods/binding
	Kubelet   ID = "kubelet"   // kubelet: admit, QoS cgroup, dirs, volumes
	Sandbox   ID = "sandbox"   // kubelet → runtime: RunPodSandbox
	CNI       ID = "cni"       // runtime → CNI: netns, veth, IPAM
	Pull      ID = "pull"      // kubelet → runtime: image pull
	Create    ID = "create"    // kubelet → runtime: CreateContainer
	Start     ID = "start"     // kubelet → runtime: StartContainer
	Hooks     ID = "hooks"     // kubelet: postStart hooks
	Ready     ID = "ready"     // kubelet: startup and readiness probes
)

// The stages of a pod's way down, in order.
const (
	Terminate ID = "terminate" // preStop, SIGTERM, grace period, kill
	Cleanup   ID = "cleanup"   // CNI DEL, sandbox removal
	Delete    ID = "delete"    // the object leaves etcd
)

// Lifecycle lists the stages from apply to Ready, in order.
var Lifecycle = []ID{Authn, Authz, Admission, Persist, Reconcile, Schedule, Bind,
	Kubelet, Sandbox, CNI, Pull, Create, Start, Hooks, Ready}

// Teardown lists the stages of a deletion, in order.
var Teardown = []ID{Terminate, Cleanup, Delete}

// All lists every stage: Lifecycle then Teardown.
var All = append(append([]ID{}, Lifecycle...), Teardown...)

var index = func() map[ID]int {
	m := make(map[ID]int, len(All))
	for i, id := range All {
		m[id] = i
	}
	return m
}()

// Index returns the stage's position in All, or -1 for an unknown stage.
func (id ID) Index() int {
	if i, ok := index[id]; ok {
		return i
	}
	return -1
}

// Valid reports whether id is one of the known stages.
func (id ID) Valid() bool { return id.Index() >= 0 }

// Before reports whether id comes before other in All.
func (id ID) Before(other ID) bool { return id.Index() < other.Index() }

// Parse returns the stage named s (case-insensitive).
func Parse(s string) (ID, error) {
	id := ID(strings.ToLower(strings.TrimSpace(s)))
	if !id.Valid() {
		return "", fmt.Errorf("unknown stage %q (want one of %s)", s, joinIDs(All))
	}
	return id, nil
}

// Info describes what a stage does and who does it, for people, and how
// narrow columns label it.
type Info struct {
	Component string // the component that does the work, e.g. "kubelet"
	Summary   string // one line: what happens in this stage
	Short     string // two letters, for the narrowest column headers: "sb"
	Medium    string // at most four letters, for narrow headers: "sbox"
}

var infos = map[ID]Info{
	Authn:     {"kube-apiserver", "Who is asking: client certificate, bearer token or service account token.", "au", "autn"},
	Authz:     {"kube-apiserver", "May they: RBAC Roles, ClusterRoles and their bindings.", "az", "autz"},
	Admission: {"kube-apiserver", "Mutating then validating admission (NamespaceLifecycle, ServiceAccount, LimitRanger, DefaultTolerationSeconds, ResourceQuota), then object validation.", "ad", "adm"},
	Persist:   {"kube-apiserver", "Write to etcd under /registry/<resource>/<namespace>/<name>; resourceVersion is the etcd revision.", "pe", "pers"},
	Reconcile: {"kube-controller-manager", "Deployment → ReplicaSet → Pod, driven by watches; ReplicaSets create pods in slow-start batches.", "rc", "rec"},
	Schedule:  {"kube-scheduler", "Take the pod from the queue, run filter plugins per node, score the feasible nodes, pick one.", "sc", "schd"},
	Bind:      {"kube-scheduler", "POST pods/binding: spec.nodeName is set and PodScheduled becomes True.", "bi", "bind"},
	Kubelet:   {"kubelet", "Pod sync: admit on the node, QoS cgroup, pod directories, volumes and secrets.", "kl", "kubl"},
	Sandbox:   {"kubelet", "RunPodSandbox: the pause container that owns the pod's namespaces.", "sb", "sbox"},
	CNI:       {"container runtime", "CNI ADD: network namespace, veth pair and an IP from IPAM; PodReadyToStartContainers becomes True.", "cn", "cni"},
	Pull:      {"kubelet", "Pull each container image (init containers first), honouring imagePullPolicy.", "pl", "pull"},
	Create:    {"kubelet", "CreateContainer in the sandbox.", "cr", "crea"},
	Start:     {"kubelet", "StartContainer; crashes restart with back-off (CrashLoopBackOff).", "st", "strt"},
	Hooks:     {"kubelet", "postStart hooks (exec or HTTP); a failing hook kills the container.", "hk", "hook"},
	Ready:     {"kubelet", "Startup and readiness probes; ContainersReady and Ready become True.", "rd", "rdy"},
	Terminate: {"kubelet", "preStop hook, stop signal, grace period, then kill.", "tm", "term"},
	Cleanup:   {"kubelet", "CNI DEL and sandbox removal.", "cl", "clen"},
	Delete:    {"kube-apiserver", "The pod object leaves etcd.", "dl", "del"},
}

// Describe returns what the stage does and who does it.
func (id ID) Describe() Info { return infos[id] }

func joinIDs(ids []ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
