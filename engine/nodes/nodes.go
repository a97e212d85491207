// Package nodes describes the simulated cluster's nodes: a default set for
// `--nodes N` and a YAML file naming each node with its capacity, labels and
// taints. Errors in the file name the line and the field.
package nodes

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Spec is one node to run a kubelet for.
type Spec struct {
	Name string
	// Capacity holds cpu, memory and pods (allocatable equals capacity).
	Capacity v1.ResourceList
	Labels   map[string]string
	Taints   []v1.Taint
	// PodCIDR is the node's pod address range, e.g. 10.244.1.0/24.
	PodCIDR string
}

// Default capacity of a node, as `--nodes N` makes them.
const (
	DefaultCPU    = "4"
	DefaultMemory = "8Gi"
	DefaultPods   = "110"
)

// DefaultCapacity returns 4 cpu, 8Gi memory, 110 pods.
func DefaultCapacity() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(DefaultCPU),
		v1.ResourceMemory: resource.MustParse(DefaultMemory),
		v1.ResourcePods:   resource.MustParse(DefaultPods),
	}
}

// PodCIDR returns the pod range of the i-th node (from 0): 10.244.(i+1).0/24,
// continuing into 10.245.x.0/24 and on after 255 nodes.
func PodCIDR(i int) string {
	n := i + 1
	return fmt.Sprintf("10.%d.%d.0/24", 244+n/256, n%256)
}

// Defaults returns n nodes named node-1 … node-n with default capacity.
func Defaults(n int) []Spec {
	out := make([]Spec, n)
	for i := range out {
		out[i] = Spec{Name: fmt.Sprintf("node-%d", i+1), Capacity: DefaultCapacity(), Labels: map[string]string{}, PodCIDR: PodCIDR(i)}
	}
	return out
}

// file is the YAML layout:
//
//	nodes:
//	  - name: node-1
//	    capacity: {cpu: "8", memory: 16Gi, pods: 110}
//	    labels: {topology.kubernetes.io/zone: a}
//	    taints: [{key: gpu, value: "true", effect: NoSchedule}]
type file struct {
	Nodes []nodeYAML `yaml:"nodes"`
}

type nodeYAML struct {
	Name     string            `yaml:"name"`
	Capacity map[string]string `yaml:"capacity"`
	Labels   map[string]string `yaml:"labels"`
	Taints   []taintYAML       `yaml:"taints"`
	PodCIDR  string            `yaml:"podCIDR"`
}

type taintYAML struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value"`
	Effect string `yaml:"effect"`
}

// Load reads a nodes file.
func Load(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read nodes file: %w", err)
	}
	specs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Parse reads the YAML layout shown on file. Unknown fields, bad names,
// quantities and taint effects are errors that name their line and field.
func Parse(data []byte) ([]Spec, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	var f file
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	items := nodeItems(&root)
	if len(f.Nodes) == 0 {
		return nil, fmt.Errorf("line %d: field nodes: no nodes listed", max(1, root.Line))
	}
	seen := map[string]bool{}
	out := make([]Spec, 0, len(f.Nodes))
	for i, n := range f.Nodes {
		item := items[i]
		at := func(field string) string {
			return fmt.Sprintf("line %d: field nodes[%d].%s", lineOf(item, field), i, field)
		}
		if n.Name == "" {
			return nil, fmt.Errorf("%s: a node needs a name", at("name"))
		}
		if !dns1123.MatchString(n.Name) || len(n.Name) > 253 {
			return nil, fmt.Errorf("%s: %q is not a valid node name (lowercase letters, digits, '-' and '.')", at("name"), n.Name)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("%s: node %q is listed twice", at("name"), n.Name)
		}
		seen[n.Name] = true
		s := Spec{Name: n.Name, Capacity: DefaultCapacity(), Labels: map[string]string{}, PodCIDR: n.PodCIDR}
		if s.PodCIDR == "" {
			s.PodCIDR = PodCIDR(i)
		}
		for k, v := range n.Capacity {
			switch v1.ResourceName(k) {
			case v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage:
			default:
				return nil, fmt.Errorf("%s: unknown resource %q (want cpu, memory, pods or ephemeral-storage)", at("capacity"), k)
			}
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Sign() < 0 {
				return nil, fmt.Errorf("%s.%s: %q is not a quantity", at("capacity"), k, v)
			}
			s.Capacity[v1.ResourceName(k)] = q
		}
		for k, v := range n.Labels {
			s.Labels[k] = v
		}
		for j, t := range n.Taints {
			effect := v1.TaintEffect(t.Effect)
			switch effect {
			case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
			default:
				return nil, fmt.Errorf("%s[%d].effect: %q is not NoSchedule, PreferNoSchedule or NoExecute", at("taints"), j, t.Effect)
			}
			if t.Key == "" {
				return nil, fmt.Errorf("%s[%d].key: a taint needs a key", at("taints"), j)
			}
			s.Taints = append(s.Taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: effect})
		}
		out = append(out, s)
	}
	return out, nil
}

// nodeItems returns the mapping node of each entry under "nodes".
func nodeItems(root *yaml.Node) []*yaml.Node {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "nodes" {
			return doc.Content[i+1].Content
		}
	}
	return nil
}

// lineOf returns the line of field in the mapping item, or the item's line.
func lineOf(item *yaml.Node, field string) int {
	if item == nil {
		return 0
	}
	for i := 0; i+1 < len(item.Content); i += 2 {
		if item.Content[i].Value == field {
			return item.Content[i+1].Line
		}
	}
	return item.Line
}
