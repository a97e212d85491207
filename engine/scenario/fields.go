package scenario

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// knownFields lists the keys each mapping of a scenario file may hold, by
// its place in the file ("" is the top, "expect[]" each expectation).
var knownFields = map[string][]string{
	"":         {"title", "story", "nodes", "kubelet", "setup", "faults", "manifests", "goal", "expect", "hints", "explanation", "fix"},
	"kubelet":  {"maxContainerRestartPeriod"},
	"setup":    {"delete"},
	"goal":     {"description", "namespace", "deployment", "pod"},
	"expect[]": {"stage", "status", "minDuration", "event", "waiting", "reason", "message"},
	"fix":      {"description", "apply", "removeFaults", "annotate", "restart"},
}

// unknownField reports the first key the author wrote that the format does
// not have, with its line and the field it most likely meant:
// `mine.yaml:13: unknown field goal.deploymnet: did you mean deployment?`.
func (p parser) unknownField() error {
	n := p.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	if err := p.checkKeys(n, "", ""); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch {
		case key == "expect" && val.Kind == yaml.SequenceNode:
			for j, item := range val.Content {
				if err := p.checkKeys(item, "expect[]", fmt.Sprintf("expect[%d].", j)); err != nil {
					return err
				}
			}
		case knownFields[key] != nil:
			if err := p.checkKeys(val, key, key+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkKeys checks a mapping's keys against knownFields[place]; prefix
// names the mapping in the error.
func (p parser) checkKeys(n *yaml.Node, place, prefix string) error {
	if n.Kind != yaml.MappingNode {
		return nil // a wrong type is the decoder's to report
	}
	known := knownFields[place]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if contains(known, k.Value) {
			continue
		}
		if guess := closest(k.Value, known); guess != "" {
			return fmt.Errorf("%s:%d: unknown field %s%s: did you mean %s?", p.source, k.Line, prefix, k.Value, guess)
		}
		return fmt.Errorf("%s:%d: unknown field %s%s (known here: %s)", p.source, k.Line, prefix, k.Value, strings.Join(known, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// closest returns the known field nearest to s (same letters in another
// case, or at most two edits for names of four letters and more), or "".
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, s) {
			return k
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(k))
		if limit := min(2, len(k)/3); d <= limit && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
