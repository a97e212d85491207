package apply

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/resource"
)

// names lists objs as "Kind name from source", in order.
func names(objs []Object) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetName()+" from "+o.Source)
	}
	return strings.Join(out, ", ")
}

// TestParse: documents, comments and Lists decode as kubectl apply decodes
// them, and a bad manifest fails with kubectl's words (run `kubectl apply
// --dry-run=client -f f.yaml` to compare; podtrace leaves out kubectl's
// hint to use --validate=false, a flag it does not have).
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, manifest, want, err string
	}{
		{name: "documents and a comment", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# comment\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
			want: "Namespace a from f.yaml, Deployment web from f.yaml"},
		{name: "list", manifest: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"Secret","metadata":{"name":"b","namespace":"x"}}]}`,
			want: "ConfigMap a from f.yaml, Secret b from f.yaml"},
		{name: "bad yaml", manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n",
			err: "error parsing f.yaml: error converting YAML to JSON: yaml: line 5: mapping values are not allowed in this context"},
		{name: "no kind", manifest: "apiVersion: v1\nmetadata:\n  name: w\n",
			err: `error validating "f.yaml": error validating data: kind not set`},
		{name: "no kind nor apiVersion", manifest: "metadata:\n  name: w\n",
			err: `error validating "f.yaml": error validating data: [apiVersion not set, kind not set]`},
		{name: "name not a string", manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: 5\n",
			err: `unable to decode "f.yaml": json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string`},
		{name: "only a comment", manifest: "# nothing\n", err: "no objects passed to apply"},
		{name: "empty list", manifest: `{"apiVersion":"v1","kind":"List","items":[]}`, err: "no objects passed to apply"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse([]byte(tt.manifest), "f.yaml")
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || names(objs) != tt.want {
				t.Fatalf("got %q, %v; want %q", names(objs), err, tt.want)
			}
		})
	}
}

// TestRead finds manifests as kubectl apply -f does: files in order, a
// directory's manifests by extension (subdirectories with -R), globs, an
// explicit file whatever its name, standard input, a URL.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.yaml", "b.yml", "c.json", "notes.txt", "sub/d.yaml", "plain", "empty/notes.txt"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(configMap(filepath.Base(name))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stdin := filepath.Join(dir, "stdin")
	if err := os.WriteFile(stdin, []byte(configMap("s")), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(configMap("u"))) }))
	defer srv.Close()
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, tt := range []struct {
		name      string
		files     []string
		recursive bool
		want      string // each object as "SOURCE:NAME" (the base name of its source), in order
		err       string
	}{
		{"directory", []string{dir}, false, "a.yaml:a.yaml b.yml:b.yml c.json:c.json", ""},
		{"recursive", []string{dir}, true, "a.yaml:a.yaml b.yml:b.yml c.json:c.json d.yaml:d.yaml", ""},
		{"files in order", []string{at("b.yml"), at("a.yaml")}, false, "b.yml:b.yml a.yaml:a.yaml", ""},
		{"explicit file of any name", []string{at("plain")}, false, "plain:plain", ""},
		{"glob", []string{at("*.y*ml")}, false, "a.yaml:a.yaml b.yml:b.yml", ""},
		{"stdin and a directory", []string{"-", at("sub")}, false, "STDIN:s d.yaml:d.yaml", ""},
		{"url", []string{srv.URL + "/m.yaml"}, false, "m.yaml:u", ""},
		{"missing", []string{at("none.yaml")}, false, "", `the path "` + at("none.yaml") + `" does not exist`},
		{"glob matching nothing", []string{at("sub/*.txt")}, false, "", `the path "` + at("sub/*.txt") + `" does not exist`},
		{"no manifests", []string{at("empty")}, false, "", "error reading [" + at("empty") + "]: recognized file extensions are [.json .yaml .yml]"},
		{"stdin twice", []string{"-", "-"}, false, "", "standard input cannot be used for multiple arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			saved := os.Stdin
			os.Stdin = f
			defer func() { os.Stdin = saved }()
			objs, err := Read(resource.FilenameOptions{Filenames: tt.files, Recursive: tt.recursive})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			var got []string
			for _, o := range objs {
				got = append(got, filepath.Base(o.Source)+":"+o.GetName())
			}
			if err != nil || strings.Join(got, " ") != tt.want {
				t.Fatalf("read %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// configMap is a manifest of one ConfigMap.
func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}
