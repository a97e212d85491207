package scenario

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/stages"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// layout is the file format; see builtin/*.yaml for examples.
type layout struct {
	Title       string       `yaml:"title"`
	Story       string       `yaml:"story"`
	Nodes       yaml.Node    `yaml:"nodes"`
	Kubelet     kubeletYAML  `yaml:"kubelet"`
	Setup       setupYAML    `yaml:"setup"`
	Faults      []string     `yaml:"faults"`
	Manifests   string       `yaml:"manifests"`
	Goal        goalYAML     `yaml:"goal"`
	Expect      []expectYAML `yaml:"expect"`
	Hints       []string     `yaml:"hints"`
	Explanation string       `yaml:"explanation"`
	Fix         fixYAML      `yaml:"fix"`
}

type kubeletYAML struct {
	MaxContainerRestartPeriod string `yaml:"maxContainerRestartPeriod"`
}

type setupYAML struct {
	Delete []string `yaml:"delete"`
}

type goalYAML struct {
	Description string `yaml:"description"`
	Namespace   string `yaml:"namespace"`
	Deployment  string `yaml:"deployment"`
	Pod         string `yaml:"pod"`
}

type expectYAML struct {
	Stage       string `yaml:"stage"`
	Status      string `yaml:"status"`
	MinDuration string `yaml:"minDuration"`
	Event       string `yaml:"event"`
	Waiting     string `yaml:"waiting"`
	Reason      string `yaml:"reason"`
	Message     string `yaml:"message"`
}

type fixYAML struct {
	Description  string        `yaml:"description"`
	Apply        string        `yaml:"apply"`
	RemoveFaults bool          `yaml:"removeFaults"`
	Annotate     *annotateYAML `yaml:"annotate"`
	Restart      string        `yaml:"restart"`
}

// LoadFile reads a scenario file; the scenario is named after the file.
func LoadFile(file string) (*Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(data, file)
}

// Parse reads a scenario; source (a file name) names it and prefixes errors,
// which name the line and the field: "web.yaml:12: field goal.deployment: ...".
func Parse(data []byte, source string) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", source, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	p := parser{source: source, root: &root, data: data}
	if err := p.unknownField(); err != nil {
		return nil, err
	}
	var l layout
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  ")
		msg = strings.ReplaceAll(msg, " in type scenario.", " in type ")
		return nil, fmt.Errorf("%s: %s", source, strings.TrimPrefix(msg, "yaml: "))
	}
	return p.build(&l)
}

type parser struct {
	source string
	root   *yaml.Node
	data   []byte
}

// errorf returns an error naming the line of the field at path (keys and
// sequence indexes) and the field in dotted form.
func (p parser) errorf(fieldPath []any, format string, args ...any) error {
	line, name := 1, ""
	n := p.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n != nil {
		line = max(line, n.Line)
	}
	for _, step := range fieldPath {
		switch s := step.(type) {
		case string:
			if name != "" {
				name += "."
			}
			name += s
			if n == nil || n.Kind != yaml.MappingNode {
				n = nil
				continue
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == s {
					next = n.Content[i+1]
				}
			}
			n = next
		case int:
			name += fmt.Sprintf("[%d]", s)
			if n == nil || n.Kind != yaml.SequenceNode || s >= len(n.Content) {
				n = nil
				continue
			}
			n = n.Content[s]
		}
		if n != nil {
			line = n.Line
		}
	}
	return fmt.Errorf("%s:%d: field %s: %s", p.source, line, name, fmt.Sprintf(format, args...))
}

var scenarioName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func (p parser) build(l *layout) (*Scenario, error) {
	s := &Scenario{Name: strings.TrimSuffix(filepath.Base(p.source), filepath.Ext(p.source)),
		Title: strings.TrimSpace(l.Title), Story: strings.TrimSpace(l.Story), Hints: l.Hints,
		Explanation: strings.TrimSpace(l.Explanation), Manifest: l.Manifests, Setup: l.Setup.Delete}
	if s.Title == "" {
		return nil, p.errorf([]any{"title"}, "a scenario needs a title")
	}
	if s.Story == "" {
		return nil, p.errorf([]any{"story"}, "a scenario needs a story")
	}
	var err error
	if s.Nodes, err = p.nodes(&l.Nodes); err != nil {
		return nil, err
	}
	if v := l.Kubelet.MaxContainerRestartPeriod; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return nil, p.errorf([]any{"kubelet", "maxContainerRestartPeriod"}, "%q is not a duration of at least 1s", v)
		}
		s.MaxContainerRestartPeriod = d
	}
	for i, obj := range s.Setup {
		if _, _, _, err := splitObject(obj); err != nil {
			return nil, p.errorf([]any{"setup", "delete", i}, "%v", err)
		}
	}
	for i, text := range l.Faults {
		f, err := stages.ParseFault(text)
		if err == nil {
			f, err = stages.ResolveVariant(f)
		}
		if err != nil {
			return nil, p.errorf([]any{"faults", i}, "%v", err)
		}
		s.Faults = append(s.Faults, f)
	}
	if strings.TrimSpace(s.Manifest) == "" {
		return nil, p.errorf([]any{"manifests"}, "a scenario needs manifests to apply")
	}
	if err := checkManifest(s.Manifest, "manifests"); err != nil {
		return nil, p.errorf([]any{"manifests"}, "%v", err)
	}
	g := l.Goal
	s.Goal = Goal{Description: g.Description, Namespace: g.Namespace, Deployment: g.Deployment, Pod: g.Pod}
	if s.Goal.Namespace == "" {
		s.Goal.Namespace = "default"
	}
	if (g.Deployment == "") == (g.Pod == "") {
		return nil, p.errorf([]any{"goal"}, "name exactly one of deployment and pod")
	}
	if s.Goal.Description == "" {
		s.Goal.Description = s.Goal.String()
	}
	for i, e := range l.Expect {
		x, err := p.expectation(i, e)
		if err != nil {
			return nil, err
		}
		s.Expect = append(s.Expect, x)
	}
	if len(s.Hints) == 0 {
		return nil, p.errorf([]any{"hints"}, "a scenario needs at least one hint")
	}
	s.Fix = Fix{Description: strings.TrimSpace(l.Fix.Description), Apply: l.Fix.Apply, RemoveFaults: l.Fix.RemoveFaults}
	if s.Fix.Apply == "" && !s.Fix.RemoveFaults {
		return nil, p.errorf([]any{"fix"}, "the fix must apply a manifest or remove the faults")
	}
	if s.Fix.Apply != "" {
		if err := checkManifest(s.Fix.Apply, "fix"); err != nil {
			return nil, p.errorf([]any{"fix", "apply"}, "%v", err)
		}
	}
	a, err := p.annotate(l.Fix.Annotate, s.Goal.Namespace)
	if err != nil {
		return nil, err
	}
	s.Fix.Annotate = a
	if s.Fix.Restart, err = p.restart(l.Fix.Restart, s.Goal.Namespace); err != nil {
		return nil, err
	}
	return s, nil
}

// nodes reads the nodes field: a count, or a list in the nodes-file layout.
func (p parser) nodes(n *yaml.Node) ([]nodes.Spec, error) {
	switch n.Kind {
	case 0:
		return nodes.Defaults(3), nil
	case yaml.ScalarNode:
		var count int
		if err := n.Decode(&count); err != nil || count < 1 || count > 100 {
			return nil, p.errorf([]any{"nodes"}, "%q is not a node count from 1 to 100 (or give a list of nodes)", n.Value)
		}
		return nodes.Defaults(count), nil
	case yaml.SequenceNode:
		// Parse the list in place: every other line blanked, so that the
		// nodes parser's line numbers are the file's.
		lines := strings.Split(string(p.data), "\n")
		first, last := n.Line-1, len(lines)-1
		doc := p.root.Content[0]
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if k := doc.Content[i]; k.Value == "nodes" {
				first = k.Line - 1
			} else if k.Line-1 > first && k.Line-2 < last && k.Line > n.Line {
				last = k.Line - 2
			}
		}
		out := make([]string, len(lines))
		copy(out[first:last+1], lines[first:last+1])
		specs, err := nodes.Parse([]byte(strings.Join(out, "\n")))
		if err != nil {
			return nil, fmt.Errorf("%s:%s", p.source, strings.TrimPrefix(err.Error(), "line "))
		}
		return specs, nil
	}
	return nil, p.errorf([]any{"nodes"}, "want a node count or a list of nodes")
}

func (p parser) expectation(i int, e expectYAML) (Expectation, error) {
	at := func(field string) []any { return []any{"expect", i, field} }
	x := Expectation{Event: e.Event, Waiting: e.Waiting, Reason: e.Reason, Message: e.Message, Status: stages.Status(e.Status)}
	set := 0
	for _, v := range []string{e.Stage, e.Event, e.Waiting} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return x, p.errorf([]any{"expect", i}, "name exactly one of stage, event and waiting")
	}
	if e.Stage != "" {
		id, err := stages.Parse(e.Stage)
		if err != nil {
			return x, p.errorf(at("stage"), "%v", err)
		}
		x.Stage = id
	}
	switch x.Status {
	case "", stages.Started, stages.Succeeded, stages.Failed, stages.Retrying, stages.Waiting:
	default:
		return x, p.errorf(at("status"), "unknown status %q (want started, succeeded, failed, retrying or waiting)", e.Status)
	}
	if e.MinDuration != "" {
		d, err := time.ParseDuration(e.MinDuration)
		if err != nil || d <= 0 {
			return x, p.errorf(at("minDuration"), "%q is not a positive duration", e.MinDuration)
		}
		x.MinDuration = d
	}
	if x.Stage == "" && (x.Status != "" || x.MinDuration != 0) {
		return x, p.errorf(at("status"), "status and minDuration apply to stage expectations only")
	}
	return x, nil
}

// splitObject reads "resource/name" or "resource/namespace/name".
func splitObject(s string) (resource, namespace, name string, err error) {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], "", parts[1], nil
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return parts[0], parts[1], parts[2], nil
	}
	return "", "", "", fmt.Errorf("%q: want RESOURCE/NAME or RESOURCE/NAMESPACE/NAME", s)
}

// Builtin returns the built-in scenarios, sorted by name.
func Builtin() ([]*Scenario, error) {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, ent := range entries {
		data, err := builtinFS.ReadFile(path.Join("builtin", ent.Name()))
		if err != nil {
			return nil, err
		}
		s, err := Parse(data, ent.Name())
		if err != nil {
			return nil, fmt.Errorf("built-in scenario %w", err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Lookup returns the built-in scenario called name, or, when name is a path
// to a file (it contains a slash or ends in .yaml), that file's scenario.
func Lookup(name string) (*Scenario, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		return LoadFile(name)
	}
	if scenarioName.MatchString(name) {
		// Only this one is parsed: the UI's first frame waits for it.
		if data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml")); err == nil {
			s, err := Parse(data, name+".yaml")
			if err != nil {
				return nil, fmt.Errorf("built-in scenario %w", err)
			}
			return s, nil
		}
	}
	all, err := Builtin()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	if !scenarioName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a scenario name or a .yaml file", name)
	}
	return nil, fmt.Errorf("no scenario %q (built in: %s)", name, strings.Join(names, ", "))
}

// checkManifest parses a manifest and checks its kinds exist.
func checkManifest(manifest, source string) error {
	objs, err := apply.Parse([]byte(manifest), source)
	if err != nil {
		return err
	}
	return apply.CheckKinds(objs)
}
