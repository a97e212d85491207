package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
)

const valid = `title: t
story: s
nodes: 2
faults:
  - pull:fail:not-found@pod/default/web
manifests: |
  apiVersion: v1
  kind: Pod
  metadata: {name: web}
  spec:
    containers: [{name: web, image: nginx:1.27}]
goal:
  pod: web
expect:
  - stage: pull
    reason: ErrImagePull
hints: [look]
fix:
  removeFaults: true
`

func TestParseValid(t *testing.T) {
	s, err := Parse([]byte(valid), "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "mine" || len(s.Nodes) != 2 || s.Goal.Namespace != "default" || s.Goal.Description != "pod default/web is Running and Ready" {
		t.Fatalf("parsed %+v", s)
	}
	if len(s.Faults) != 1 || s.Faults[0].Variant != "not-found" || s.Faults[0].Scope.Pod != "default/web" {
		t.Fatalf("faults %+v", s.Faults)
	}
	if len(s.Expect) != 1 || s.Expect[0].Stage != stages.Pull {
		t.Fatalf("expect %+v", s.Expect)
	}
}

func TestParseKubeletRestartPeriod(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(valid, "nodes: 2\n", "nodes: 2\nkubelet:\n  maxContainerRestartPeriod: 20s\n", 1)), "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxContainerRestartPeriod != 20*time.Second {
		t.Fatalf("maxContainerRestartPeriod %s, want 20s", s.MaxContainerRestartPeriod)
	}
	if crash, err := Lookup("crash-loop"); err != nil || crash.MaxContainerRestartPeriod != 20*time.Second {
		t.Fatalf("crash-loop: %v, restart period %s, want 20s", err, crash.MaxContainerRestartPeriod)
	}
}

// TestParseErrorsNameLineAndField breaks one field of a valid file at a time.
func TestParseErrorsNameLineAndField(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown field", "hints: [look]", "hints: [look]\ncolour: red", "mine.yaml:18: unknown field colour (known here: title, story,"},
		{"misspelt field", "hints: [look]", "hint: [look]", "mine.yaml:17: unknown field hint: did you mean hints?"},
		{"misspelt nested field", "  pod: web", "  pod: web\n  namepsace: prod", "mine.yaml:14: unknown field goal.namepsace: did you mean namespace?"},
		{"misspelt expectation", "    reason: ErrImagePull", "    reasn: ErrImagePull", "mine.yaml:16: unknown field expect[0].reasn: did you mean reason?"},
		{"wrong case", "  removeFaults: true", "  removefaults: true", "mine.yaml:19: unknown field fix.removefaults: did you mean removeFaults?"},
		{"bad fault", "pull:fail:not-found@pod", "pull:explode@pod", `mine.yaml:5: field faults[0]: fault "pull:explode@pod/default/web": unknown kind "explode"`},
		{"unknown variant", "pull:fail:not-found", "pull:fail:nope", `mine.yaml:5: field faults[0]: stage pull has no variant "nope"`},
		{"bad stage", "  - stage: pull", "  - stage: pul", `mine.yaml:15: field expect[0].stage: unknown stage "pul"`},
		{"two goals", "  pod: web", "  pod: web\n  deployment: web", "mine.yaml:13: field goal: name exactly one of deployment and pod"},
		{"no title", "title: t", "title: ''", "mine.yaml:1: field title: a scenario needs a title"},
		{"bad manifest", "kind: Pod", "kind: Pode", `mine.yaml:6: field manifests: resource mapping not found`},
		{"bad count", "nodes: 2", "nodes: many", `mine.yaml:3: field nodes: "many" is not a node count`},
		{"bad node", "nodes: 2", "nodes:\n  - name: Node_1", `mine.yaml:4: field nodes[0].name: "Node_1" is not a valid node name`},
		{"no fix", "  removeFaults: true", "  description: x", "mine.yaml:19: field fix: the fix must apply a manifest or remove the faults"},
		{"wrong type", "hints: [look]", "hints: {a: b}", "mine.yaml: line 17: cannot unmarshal !!map into []string"},
		{"bad restart period", "nodes: 2", "nodes: 2\nkubelet: {maxContainerRestartPeriod: 10ms}", `mine.yaml:4: field kubelet.maxContainerRestartPeriod: "10ms" is not a duration of at least 1s`},
		{"kubelet typo", "nodes: 2", "nodes: 2\nkubelet: {maxRestartPeriod: 10s}", "mine.yaml:4: unknown field kubelet.maxRestartPeriod (known here: maxContainerRestartPeriod)"},
		{"annotation without value", "  removeFaults: true", "  removeFaults: true\n  annotate: {resource: replicasets, selector: app=web, annotation: retry}", "mine.yaml:20: field fix.annotate.annotation: want KEY=VALUE"},
		{"bad selector", "  removeFaults: true", "  removeFaults: true\n  annotate: {resource: replicasets, selector: 'app in', annotation: a=b}", "mine.yaml:20: field fix.annotate.selector: want a label selector"},
		{"restart of a pod", "  removeFaults: true", "  removeFaults: true\n  restart: pod/web", `mine.yaml:20: field fix.restart: "pod/web": want deployment/NAME`},
		{"bad duration", "    reason: ErrImagePull", "    reason: ErrImagePull\n    minDuration: soon", `mine.yaml:17: field expect[0].minDuration: "soon" is not a positive duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(valid, tt.old) {
				t.Fatalf("%q not in the valid file", tt.old)
			}
			_, err := Parse([]byte(strings.Replace(valid, tt.old, tt.new, 1)), "mine.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestBuiltinScenariosLoad(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cni-out-of-ips", "crash-loop", "etcd-slow", "image-typo", "insufficient-cpu", "missing-configmap",
		"node-not-ready", "nodeselector-mismatch", "poststart-hook", "private-image", "quota-exceeded", "rbac-forbidden", "untolerated-taint"}
	var got []string
	for _, s := range all {
		got = append(got, s.Name)
		if len(s.Expect) == 0 || s.Explanation == "" || len(s.Hints) < 2 || s.Fix.Description == "" {
			t.Errorf("%s: needs expectations, an explanation, graded hints and a described fix", s.Name)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("built-in scenarios %v, want %v", got, want)
	}
	if _, err := Lookup("image-typo"); err != nil {
		t.Fatal(err)
	}
	if _, err := Lookup("imagetypo"); err == nil || !strings.Contains(err.Error(), `no scenario "imagetypo" (built in: cni-out-of-ips,`) {
		t.Fatalf("unknown name: %v", err)
	}
}
