package apply

import (
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, manifest, want string
		objects              int
	}{
		{name: "two documents", objects: 2, manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# comment\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"},
		{name: "list", objects: 2, manifest: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"Secret","metadata":{"name":"b"}}]}`},
		{name: "bad yaml", manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n", want: `error parsing f.yaml: error converting YAML to JSON: yaml: line 5: mapping values are not allowed in this context`},
		{name: "unknown kind", manifest: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
			want: `resource mapping not found for name: "w" namespace: "" from "f.yaml": no matches for kind "Widget" in version "example.com/v1"`},
		{name: "no kind", manifest: "apiVersion: v1\nmetadata:\n  name: w\n", want: `error validating data: [kind not set]`},
		{name: "empty", manifest: "# nothing\n", want: "no objects passed to apply"},
	}
	for _, tt := range tests {
		objs, err := Parse([]byte(tt.manifest), "f.yaml")
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
			}
			continue
		}
		if err != nil || len(objs) != tt.objects {
			t.Errorf("%s: %d objects, %v", tt.name, len(objs), err)
		}
	}
}
