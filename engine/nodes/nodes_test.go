package nodes

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestDefaults(t *testing.T) {
	got := Defaults(3)
	if len(got) != 3 || got[0].Name != "node-1" || got[2].Name != "node-3" {
		t.Fatalf("names %+v", got)
	}
	cpu := got[1].Capacity[v1.ResourceCPU]
	mem := got[1].Capacity[v1.ResourceMemory]
	pods := got[1].Capacity[v1.ResourcePods]
	if cpu.String() != "4" || mem.String() != "8Gi" || pods.String() != "110" {
		t.Fatalf("capacity %v", got[1].Capacity)
	}
	if got[0].PodCIDR != "10.244.1.0/24" || PodCIDR(255) != "10.245.0.0/24" {
		t.Fatalf("cidrs %s %s", got[0].PodCIDR, PodCIDR(255))
	}
}

func TestParse(t *testing.T) {
	good := `nodes:
  - name: big
    capacity: {cpu: "16", memory: 64Gi}
    labels: {disktype: ssd}
    taints:
      - {key: dedicated, value: gpu, effect: NoSchedule}
  - name: small
`
	specs, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	cpu := specs[0].Capacity[v1.ResourceCPU]
	pods := specs[0].Capacity[v1.ResourcePods]
	if cpu.String() != "16" || pods.String() != "110" || specs[0].Labels["disktype"] != "ssd" {
		t.Fatalf("big %+v", specs[0])
	}
	if len(specs[0].Taints) != 1 || specs[0].Taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Fatalf("taints %+v", specs[0].Taints)
	}
	if specs[1].PodCIDR != "10.244.2.0/24" {
		t.Fatalf("small cidr %s", specs[1].PodCIDR)
	}

	bad := []struct{ name, in, want string }{
		{"bad quantity", "nodes:\n  - name: a\n    capacity:\n      cpu: lots\n", `line 4: field nodes[0].capacity.cpu: "lots" is not a quantity`},
		{"bad effect", "nodes:\n  - name: a\n    taints:\n      - {key: k, effect: Never}\n", `line 4: field nodes[0].taints[0].effect: "Never" is not NoSchedule`},
		{"unknown field", "nodes:\n  - name: a\n    cpus: 4\n", "line 3: field cpus not found"},
		{"bad name", "nodes:\n  - name: Node_1\n", `line 2: field nodes[0].name: "Node_1" is not a valid node name`},
		{"duplicate", "nodes:\n  - name: a\n  - name: a\n", `line 3: field nodes[1].name: node "a" is listed twice`},
		{"empty", "nodes: []\n", "field nodes: no nodes listed"},
		{"unknown resource", "nodes:\n  - name: a\n    capacity: {gpu: 1}\n", `line 3: field nodes[0].capacity: unknown resource "gpu"`},
	}
	for _, tt := range bad {
		_, err := Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}
