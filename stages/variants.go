package stages

import (
	"fmt"
	"strings"
	"time"
)

// Variant is one realistic way a stage can fail, named as a fault's Variant.
// The engine component that runs the stage turns it into the error, reason
// and message a real cluster would show.
type Variant struct {
	// Name is what a fault's Variant holds, e.g. "not-found".
	Name string `json:"name"`
	// Description says in one line, in upstream terms, what goes wrong.
	Description string `json:"description"`
	// Kind is the fault kind the variant stands for when it is not a plain
	// failure: Delay for a slow stage, Hang for a component that is down.
	// Empty means Fail (or Flake).
	Kind FaultKind `json:"kind,omitempty"`
	// Delay is the added latency of a Delay variant.
	Delay time.Duration `json:"delay,omitempty"`
}

// Variant names that the engine's seams test for by name (the others are
// only looked up in the catalogue).
const (
	VariantQuota        = "quota"        // admission and reconcile: exceeded quota
	VariantEtcdTimeout  = "etcd-timeout" // persist and reconcile: etcdserver: request timed out
	VariantTimeout      = "timeout"      // reconcile: the request's deadline passed
	VariantConflict     = "conflict"     // persist and bind: 409, the object was modified
	VariantRBACLost     = "rbac-lost"    // authz: the components lose their bindings
	VariantForbidden    = "forbidden"    // authz and reconcile: 403 from RBAC
	VariantPluginError  = "plugin-error" // cni: the bridge plugin fails
	VariantUnauthorized = "unauthorized" // pull: pull access denied
	VariantUnreachable  = "unreachable"  // pull: the registry cannot be reached
)

// catalogue lists, per stage, its realistic failures; the first is the one a
// fault without a variant produces.
var catalogue = map[ID][]Variant{
	Authn: {
		{Name: "expired-token", Description: "the client's bearer token or certificate has expired: 401 Unauthorized"},
	},
	Authz: {
		{Name: VariantForbidden, Description: `the caller's RBAC binding is gone: 403 pods is forbidden: User "..." cannot create resource "pods"`},
		{Name: VariantRBACLost, Description: "controllers and kubelets lose their RBAC bindings (system:masters still bypasses RBAC): 403 on their writes"},
	},
	Admission: {
		{Name: "webhook-deny", Description: `a validating admission webhook denies the request: admission webhook "deny.podtrace.dev" denied the request`},
		{Name: VariantQuota, Description: "ResourceQuota admission rejects the object: 403 exceeded quota: compute-quota"},
	},
	Persist: {
		{Name: VariantEtcdTimeout, Description: "etcd does not commit in time: 504 etcdserver: request timed out"},
		{Name: VariantConflict, Description: "the object was changed meanwhile: 409 the object has been modified; please apply your changes to the latest version"},
	},
	Reconcile: {
		{Name: VariantEtcdTimeout, Description: "the controller's create fails with 500 etcdserver: request timed out: FailedCreate, requeued with back-off"},
		{Name: VariantForbidden, Description: "the controller lost its RBAC: FailedCreate pods is forbidden: User \"system:serviceaccount:kube-system:replicaset-controller\" cannot create"},
		{Name: VariantQuota, Description: "the controller's create exceeds a quota: FailedCreate exceeded quota"},
		{Name: VariantTimeout, Description: "the controller's request times out: 504 Timeout: request did not complete within requested timeout - context deadline exceeded"},
		{Name: "controller-down", Description: "kube-controller-manager is down: nothing reconciles until it is back", Kind: Hang},
	},
	Schedule: {
		{Name: "cpu", Description: "FailedScheduling: 0/N nodes are available: N Insufficient cpu"},
		{Name: "memory", Description: "FailedScheduling: 0/N nodes are available: N Insufficient memory"},
		{Name: "pods", Description: "FailedScheduling: 0/N nodes are available: N Too many pods"},
		{Name: "ports", Description: "FailedScheduling: N node(s) didn't have free ports for the requested pod ports"},
		{Name: "taint", Description: "every node is tainted: N node(s) had untolerated taint(s)"},
		{Name: "selector", Description: "no node matches: N node(s) didn't match Pod's node affinity/selector"},
		{Name: "unschedulable", Description: "every node is cordoned: N node(s) were unschedulable"},
	},
	Bind: {
		{Name: VariantConflict, Description: "POST pods/binding loses a race: 409 Operation cannot be fulfilled on pods/binding; the pod is scheduled again"},
	},
	Kubelet: {
		{Name: "node-not-ready", Description: "the node goes NotReady (cni plugin not initialized) and gets the node.kubernetes.io/not-ready taint"},
	},
	Sandbox: {
		{Name: "runtime-error", Description: "FailedCreatePodSandBox: the runtime cannot start the pause container (OCI runtime create failed)"},
	},
	CNI: {
		{Name: "ipam-exhausted", Description: "FailedCreatePodSandBox: failed to allocate for range 0: no IP addresses available in range set"},
		{Name: VariantPluginError, Description: `FailedCreatePodSandBox: plugin type="bridge" failed (add)`},
	},
	Pull: {
		{Name: "not-found", Description: "ErrImagePull then ImagePullBackOff: the image or tag does not exist (not found)"},
		{Name: VariantUnauthorized, Description: "ErrImagePull: pull access denied, repository does not exist or may require authorization"},
		{Name: VariantUnreachable, Description: "ErrImagePull: the registry cannot be reached (dial tcp ...: i/o timeout)"},
		{Name: "slow", Description: "the registry is slow: the pull takes 45s longer, then succeeds", Kind: Delay, Delay: 45 * time.Second},
	},
	Create: {
		{Name: "create-error", Description: "CreateContainerError: failed to create containerd container"},
	},
	Start: {
		{Name: "crash", Description: "RunContainerError: exec: executable file not found in $PATH, then CrashLoopBackOff"},
	},
	Hooks: {
		{Name: "exit-1", Description: "FailedPostStartHook: the pod's exec postStart hook exits 1 and the container is killed (pods without one are not affected)"},
	},
	Ready: {
		{Name: "never-ready", Description: "the readiness probe never passes (the application stops answering; exec probes exit 1): Running but not Ready, Unhealthy events; a pod without a readiness probe stays Ready"},
	},
}

// Variants returns the stage's realistic failures, the default first; nil
// for stages that cannot be failed (a teardown stage can only be held).
func Variants(stage ID) []Variant {
	return append([]Variant(nil), catalogue[stage]...)
}

// LookupVariant returns the stage's variant called name ("" is the default).
func LookupVariant(stage ID, name string) (Variant, bool) {
	vs := catalogue[stage]
	if len(vs) == 0 {
		return Variant{}, false
	}
	if name == "" {
		return vs[0], true
	}
	for _, v := range vs {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// ResolveVariant checks f's variant against the catalogue and returns the
// fault to inject: a fail fault whose variant stands for another kind (pull
// "slow" is a delay, reconcile "controller-down" a hang) becomes that kind.
func ResolveVariant(f Fault) (Fault, error) {
	if f.Variant == "" || f.Kind == Delay {
		return f, nil
	}
	v, ok := LookupVariant(f.Stage, f.Variant)
	if !ok {
		names := make([]string, 0, len(catalogue[f.Stage]))
		for _, v := range catalogue[f.Stage] {
			names = append(names, v.Name)
		}
		if len(names) == 0 {
			return f, fmt.Errorf("stage %s has no failure variants (it can be delayed or held)", f.Stage)
		}
		return f, fmt.Errorf("stage %s has no variant %q (want one of %s)", f.Stage, f.Variant, strings.Join(names, ", "))
	}
	if f.Kind == Flake && v.Kind != "" {
		return f, fmt.Errorf("variant %s of stage %s is a %s, not a failure: use %s:fail:%s", v.Name, f.Stage, v.Kind, f.Stage, v.Name)
	}
	if f.Kind == Fail && v.Kind != "" {
		f.Kind = v.Kind
		if v.Kind == Delay {
			f.Delay = v.Delay
		}
		if v.Kind != Hang {
			f.Variant = ""
		}
	}
	return f, nil
}
