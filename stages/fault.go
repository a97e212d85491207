package stages

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultKind says how a fault breaks its stage.
type FaultKind string

// The kinds of fault.
const (
	Fail  FaultKind = "fail"  // the stage returns its realistic error, every time
	Delay FaultKind = "delay" // the stage takes Delay longer
	Hang  FaultKind = "hang"  // the stage never finishes until the fault is removed
	Flake FaultKind = "flake" // the stage fails its next Count attempts, then recovers
)

// Scope says which pods a fault applies to. The zero Scope means every pod.
type Scope struct {
	// Pod is "namespace/name" of one pod.
	Pod string `json:"pod,omitempty"`
	// Node is the name of one node; the fault applies to pods on it.
	Node string `json:"node,omitempty"`
}

// Matches reports whether the scope covers the pod with key "ns/name" on node.
func (s Scope) Matches(podKey, node string) bool {
	if s.Pod != "" && s.Pod != podKey {
		return false
	}
	if s.Node != "" && s.Node != node {
		return false
	}
	return true
}

// String renders the scope as it is written after "@" on the command line.
func (s Scope) String() string {
	switch {
	case s.Pod != "":
		return "pod/" + s.Pod
	case s.Node != "":
		return "node/" + s.Node
	}
	return "all"
}

// Fault breaks one stage on purpose.
type Fault struct {
	// ID identifies an injected fault so it can be removed; set by whoever stores it.
	ID    int       `json:"id,omitempty"`
	Stage ID        `json:"stage"`
	Kind  FaultKind `json:"kind"`
	// Variant picks one of the stage's realistic failures (e.g. "not-found" for
	// pull); empty means the stage's default failure.
	Variant string `json:"variant,omitempty"`
	// Delay is the added latency, for delay faults.
	Delay time.Duration `json:"delay,omitempty"`
	// Count is how many attempts fail, for flake faults.
	Count int   `json:"count,omitempty"`
	Scope Scope `json:"scope"`
}

// ParseFault parses the command-line form STAGE:KIND[:ARG][@SCOPE], where ARG
// is a variant for fail, a duration for delay, and N or N,VARIANT for flake;
// SCOPE is pod/NAMESPACE/NAME, pod/NAME (namespace default), node/NAME or all.
func ParseFault(s string) (Fault, error) {
	spec, scope, hasScope := strings.Cut(s, "@")
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) < 2 {
		return Fault{}, fmt.Errorf("fault %q: want STAGE:KIND[:ARG][@SCOPE]", s)
	}
	stage, err := Parse(parts[0])
	if err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	f := Fault{Stage: stage, Kind: FaultKind(strings.ToLower(parts[1]))}
	arg := ""
	if len(parts) == 3 {
		arg = parts[2]
	}
	switch f.Kind {
	case Fail, Hang:
		f.Variant = arg
	case Delay:
		if arg == "" {
			return Fault{}, fmt.Errorf("fault %q: delay needs a duration, e.g. %s:delay:5s", s, stage)
		}
		if f.Delay, err = time.ParseDuration(arg); err != nil || f.Delay <= 0 {
			return Fault{}, fmt.Errorf("fault %q: %q is not a positive duration", s, arg)
		}
	case Flake:
		n, variant, _ := strings.Cut(arg, ",")
		f.Count = 1
		if n != "" {
			if f.Count, err = strconv.Atoi(n); err != nil || f.Count < 1 {
				return Fault{}, fmt.Errorf("fault %q: flake count %q is not a positive number", s, n)
			}
		}
		f.Variant = variant
	default:
		return Fault{}, fmt.Errorf("fault %q: unknown kind %q (want fail, delay, hang or flake)", s, parts[1])
	}
	if hasScope {
		if f.Scope, err = ParseScope(scope); err != nil {
			return Fault{}, fmt.Errorf("fault %q: %w", s, err)
		}
	}
	return f, nil
}

// ParseScope parses pod/NAMESPACE/NAME, pod/NAME, node/NAME or all.
func ParseScope(s string) (Scope, error) {
	kind, rest, _ := strings.Cut(s, "/")
	switch {
	case s == "all" || s == "":
		return Scope{}, nil
	case kind == "pod" && rest != "":
		if !strings.Contains(rest, "/") {
			rest = "default/" + rest
		}
		return Scope{Pod: rest}, nil
	case kind == "node" && rest != "":
		return Scope{Node: rest}, nil
	}
	return Scope{}, fmt.Errorf("unknown scope %q (want pod/NAMESPACE/NAME, node/NAME or all)", s)
}

// String renders the fault in its command-line form.
func (f Fault) String() string {
	s := string(f.Stage) + ":" + string(f.Kind)
	switch f.Kind {
	case Delay:
		s += ":" + f.Delay.String()
	case Flake:
		s += ":" + strconv.Itoa(f.Count)
		if f.Variant != "" {
			s += "," + f.Variant
		}
	default:
		if f.Variant != "" {
			s += ":" + f.Variant
		}
	}
	if f.Scope != (Scope{}) {
		s += "@" + f.Scope.String()
	}
	return s
}
