package repotest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layer rules, with package paths relative to the module:
//
//   - stages (the vocabulary) and version import nothing of the project;
//   - engine/... never imports tui/... or themes/...;
//   - tui/... never imports engine/...;
//   - export/... (stage events sent elsewhere) imports only stages;
//   - engine and tui meet only in source/... (the UI's sources) and
//     cmd/podtrace;
//   - cmd/podtrace (flags and wiring) never imports engine/trace itself:
//     the sources and source/stream own the event hub;
//   - the seams (engine/hooks/...) never import a container runtime
//     (engine/cri/NAME/...), only engine/cri's contract;
//   - a runtime's own package (engine/cri/NAME) is imported only by
//     engine/cri/runtimes, where runtimes are chosen: everything else
//     starts one through it, by name;
//   - the simulated agnhost (engine/cri/sim/agnhost) is imported only by
//     the simulated runtime (engine/cri/sim/...), which hands it to its
//     processes.
//
// "Imports" is transitive and counts each package's tests, except in the
// last four rules: cmd/podtrace's is about what it imports directly, the
// seams' about their code (their tests may run a real runtime), and the
// runtimes' and agnhost's about what code imports directly (tests may
// start a runtime themselves).

// under reports whether rel is dir or a package below it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// runtimesPkg is where runtimes are chosen.
const runtimesPkg = "engine/cri/runtimes"

// agnhostPkg is the simulated agnhost, and simPkg the runtime that runs it.
const (
	agnhostPkg = "engine/cri/sim/agnhost"
	simPkg     = "engine/cri/sim"
)

// isRuntime reports whether rel is a container runtime's own package:
// engine/cri/NAME, other than the registry and the contract's test helpers.
func isRuntime(rel string) bool {
	name, ok := strings.CutPrefix(rel, "engine/cri/")
	return ok && !strings.Contains(name, "/") && rel != runtimesPkg && rel != "engine/cri/critest"
}

// importViolations checks the dependency graph deps (each package of
// module mod mapped to every package it depends on, directly or not, its
// tests included), code (the same without tests), direct (each package
// mapped to the packages it imports itself, its tests included) and
// imports (the same without tests) and returns one line per broken rule,
// sorted.
func importViolations(mod string, deps, code, direct, imports map[string][]string) []string {
	var out []string
	for pkg, ds := range imports {
		rel, ok := relative(mod, pkg)
		if !ok || rel == runtimesPkg {
			continue
		}
		for _, d := range ds {
			if drel, ok := relative(mod, d); ok && isRuntime(drel) && !under(rel, drel) {
				out = append(out, fmt.Sprintf("%s imports %s: a runtime is chosen only in %s", rel, drel, runtimesPkg))
			}
		}
	}
	for pkg, ds := range imports {
		rel, ok := relative(mod, pkg)
		if !ok || under(rel, simPkg) {
			continue
		}
		for _, d := range ds {
			if drel, ok := relative(mod, d); ok && under(drel, agnhostPkg) {
				out = append(out, fmt.Sprintf("%s imports %s: only the simulated runtime (%s) runs agnhost", rel, drel, simPkg))
			}
		}
	}
	for _, d := range direct[mod+"/cmd/podtrace"] {
		if drel, ok := relative(mod, d); ok && under(drel, "engine/trace") {
			out = append(out, fmt.Sprintf("cmd/podtrace imports %s: cmd/podtrace never reaches into engine/trace", drel))
		}
	}
	for pkg, ds := range code {
		if rel, ok := relative(mod, pkg); ok && under(rel, "engine/hooks") {
			for _, d := range ds {
				if drel, ok := relative(mod, d); ok && strings.HasPrefix(drel, "engine/cri/") {
					out = append(out, fmt.Sprintf("%s imports %s: the seams reach a runtime only through engine/cri's contract", rel, drel))
				}
			}
		}
	}
	for pkg, ds := range deps {
		rel, ok := relative(mod, pkg)
		if !ok {
			continue
		}
		var engineDep, tuiDep string
		for _, d := range ds {
			drel, ok := relative(mod, d)
			if !ok || drel == rel {
				continue
			}
			switch {
			case under(rel, "stages") && !under(drel, "stages"):
				out = append(out, fmt.Sprintf("%s imports %s: stages imports nothing of the project", rel, drel))
			case under(rel, "version"):
				out = append(out, fmt.Sprintf("%s imports %s: version imports nothing of the project", rel, drel))
			case under(rel, "engine") && (under(drel, "tui") || under(drel, "themes")):
				out = append(out, fmt.Sprintf("%s imports %s: engine never imports tui or themes", rel, drel))
			case under(rel, "tui") && under(drel, "engine"):
				out = append(out, fmt.Sprintf("%s imports %s: tui never imports engine", rel, drel))
			case under(rel, "export") && !under(drel, "export") && !under(drel, "stages"):
				out = append(out, fmt.Sprintf("%s imports %s: export imports only stages", rel, drel))
			}
			if under(drel, "engine") && engineDep == "" {
				engineDep = drel
			}
			if under(drel, "tui") && tuiDep == "" {
				tuiDep = drel
			}
		}
		if engineDep != "" && tuiDep != "" && rel != "cmd/podtrace" && !under(rel, "source") {
			out = append(out, fmt.Sprintf("%s imports %s and %s: only source and cmd/podtrace join engine and tui", rel, engineDep, tuiDep))
		}
	}
	sort.Strings(out)
	return out
}

// relative returns pkg's path inside module mod.
func relative(mod, pkg string) (string, bool) {
	if pkg == mod {
		return ".", true
	}
	rel, ok := strings.CutPrefix(pkg, mod+"/")
	return rel, ok
}

// packageName strips go list's test decorations: "p [p.test]" and
// "p_test [p.test]" are p's tests, "p.test" is the generated test main
// (reported as "").
func packageName(importPath string) string {
	p, _, _ := strings.Cut(importPath, " ")
	if strings.HasSuffix(p, ".test") {
		return ""
	}
	return strings.TrimSuffix(p, "_test")
}

// moduleGraph runs go list on every package of the module in root, tests
// included, and returns the module path, the dependency graph with and
// without tests, and each package's direct imports with and without tests.
func moduleGraph(t *testing.T, root string) (mod string, deps, code, direct, imports map[string][]string) {
	t.Helper()
	goCmd := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	mod = strings.TrimSpace(string(goCmd("list", "-m")))
	dec := json.NewDecoder(bytes.NewReader(goCmd("list", "-e", "-test", "-json=ImportPath,Deps,Imports", "./...")))
	deps, code, direct, imports = map[string][]string{}, map[string][]string{}, map[string][]string{}, map[string][]string{}
	for {
		var p struct {
			ImportPath string
			Deps       []string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		name := packageName(p.ImportPath)
		if name == "" {
			continue
		}
		for _, d := range p.Deps {
			if d = packageName(d); d != "" && !slices.Contains(deps[name], d) {
				deps[name] = append(deps[name], d)
			}
		}
		if _, ok := deps[name]; !ok {
			deps[name] = nil
		}
		if p.ImportPath == name { // the package itself, not its tests
			code[name] = p.Deps
			imports[name] = p.Imports
		}
		for _, d := range p.Imports {
			if d = packageName(d); d != "" && !slices.Contains(direct[name], d) {
				direct[name] = append(direct[name], d)
			}
		}
	}
	return mod, deps, code, direct, imports
}

// TestImportRules checks the layer rules on the repository's packages.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	root := repoRoot(t)
	mod, deps, code, direct, imports := moduleGraph(t, root)
	for _, want := range []string{"stages", "engine", "tui", "themes", "cmd/podtrace"} {
		if _, ok := deps[mod+"/"+want]; !ok {
			t.Fatalf("go list did not report %s/%s: the check would prove nothing", mod, want)
		}
	}
	if len(code[mod+"/engine/hooks/cri"]) == 0 {
		t.Fatalf("go list did not report %s/engine/hooks/cri's code: the seams' rule would prove nothing", mod)
	}
	if len(imports[mod+"/"+runtimesPkg]) == 0 {
		t.Fatalf("go list did not report %s/%s's imports: the runtimes' rule would prove nothing", mod, runtimesPkg)
	}
	for _, v := range importViolations(mod, deps, code, direct, imports) {
		t.Error(v)
	}
}

// TestImportViolations breaks each rule on a made-up graph.
func TestImportViolations(t *testing.T) {
	const m = "example.com/pt"
	p := func(rel string) string { return m + "/" + rel }
	clean := map[string][]string{
		p("stages"):             {"fmt", "time"},
		p("version"):            {"strings"},
		p("themes"):             {"fmt"},
		p("tui"):                {p("stages"), p("themes"), p("tui/lanes")},
		p("engine/trace"):       {p("stages"), p("version")},
		p("source/live"):        {p("engine"), p("engine/trace"), p("tui"), p("stages")},
		p("cmd/podtrace"):       {p("engine"), p("engine/trace"), p("source/live"), p("tui"), p("stages")},
		"example.com/other/tui": {"example.com/other/engine"},
	}
	cleanDirect := map[string][]string{p("cmd/podtrace"): {p("engine"), p("source/live"), p("tui")}}
	cleanCode := map[string][]string{p("engine/hooks/cri"): {p("engine/cri"), p("engine/trace"), p("stages")}}
	cleanImports := map[string][]string{
		p("engine/cri/runtimes"):    {p("engine/cri"), p("engine/cri/sim"), p("engine/cri/containerd")},
		p("engine/cri/containerd"):  {p("engine/cri"), p("engine/cri/sim/ipam")},
		p("engine/nodeset"):         {p("engine/cri"), p("engine/cri/runtimes")},
		p("cmd/podtrace"):           {p("engine"), p("engine/cri/runtimes")},
		p("cmd/podtrace-cni"):       {p("engine/cri/containerd/cniwire")},
		p("engine/cri/sim/ipam"):    {"net/netip"},
		p("engine/cri/critest"):     {p("engine/cri")},
		p("engine/cri/sim"):         {p("engine/cri"), p("engine/cri/sim/agnhost"), p("engine/cri/sim/proc")},
		p("engine/cri/sim/agnhost"): {p("engine/cri/sim/proc")},
	}
	if v := importViolations(m, clean, cleanCode, cleanDirect, cleanImports); len(v) != 0 {
		t.Fatalf("clean graph reported %q", v)
	}
	for _, tt := range []struct {
		pkg  string
		deps []string
		want string
	}{
		{"stages", []string{p("engine/trace")}, "stages imports engine/trace: stages imports nothing of the project"},
		{"version", []string{p("stages")}, "version imports stages: version imports nothing of the project"},
		{"engine/node", []string{p("tui")}, "engine/node imports tui: engine never imports tui or themes"},
		{"engine", []string{p("themes")}, "engine imports themes: engine never imports tui or themes"},
		{"tui/lanes", []string{p("engine/trace")}, "tui/lanes imports engine/trace: tui never imports engine"},
		{"export/otlp", []string{p("engine/trace")}, "export/otlp imports engine/trace: export imports only stages"},
		{"e2e/tui", []string{p("engine"), p("tui")}, "e2e/tui imports engine and tui: only source and cmd/podtrace join engine and tui"},
	} {
		graph := maps.Clone(clean)
		graph[p(tt.pkg)] = tt.deps
		if got := importViolations(m, graph, cleanCode, cleanDirect, cleanImports); !slices.Contains(got, tt.want) {
			t.Errorf("%s → %v: got %q, want %q", tt.pkg, tt.deps, got, tt.want)
		}
	}
	direct := map[string][]string{p("cmd/podtrace"): {p("engine"), p("engine/trace")}}
	want := "cmd/podtrace imports engine/trace: cmd/podtrace never reaches into engine/trace"
	if got := importViolations(m, clean, cleanCode, direct, cleanImports); !slices.Contains(got, want) {
		t.Errorf("cmd/podtrace importing engine/trace: got %q, want %q", got, want)
	}
	seam := map[string][]string{p("engine/hooks/cri"): {p("engine/cri"), p("engine/cri/containerd/cniwire")}}
	want = "engine/hooks/cri imports engine/cri/containerd/cniwire: the seams reach a runtime only through engine/cri's contract"
	if got := importViolations(m, clean, seam, cleanDirect, cleanImports); !slices.Contains(got, want) {
		t.Errorf("a seam importing a runtime: got %q, want %q", got, want)
	}
	for _, pkg := range []string{"engine/node", "engine/cri/containerd", "cmd/podtrace"} {
		imports := maps.Clone(cleanImports)
		imports[p(pkg)] = []string{p("engine/cri/sim/agnhost")}
		want := pkg + " imports engine/cri/sim/agnhost: only the simulated runtime (engine/cri/sim) runs agnhost"
		if got := importViolations(m, clean, cleanCode, cleanDirect, imports); !slices.Contains(got, want) {
			t.Errorf("%s importing agnhost: got %q, want %q", pkg, got, want)
		}
	}
	for _, tt := range []struct{ pkg, runtime string }{
		{"engine", "engine/cri/containerd"},
		{"engine/nodeset", "engine/cri/sim"},
		{"source/cluster", "engine/cri/sim"},
		{"cmd/podtrace", "engine/cri/wasm"},
	} {
		imports := maps.Clone(cleanImports)
		imports[p(tt.pkg)] = []string{p("engine/cri"), p(tt.runtime)}
		want := tt.pkg + " imports " + tt.runtime + ": a runtime is chosen only in engine/cri/runtimes"
		if got := importViolations(m, clean, cleanCode, cleanDirect, imports); !slices.Contains(got, want) {
			t.Errorf("%s importing %s: got %q, want %q", tt.pkg, tt.runtime, got, want)
		}
	}
}

func TestPackageName(t *testing.T) {
	for in, want := range map[string]string{
		"example.com/pt/tui":                                "example.com/pt/tui",
		"example.com/pt/tui [example.com/pt/tui.test]":      "example.com/pt/tui",
		"example.com/pt/tui_test [example.com/pt/tui.test]": "example.com/pt/tui",
		"example.com/pt/tui.test":                           "",
	} {
		if got := packageName(in); got != want {
			t.Errorf("packageName(%q) = %q, want %q", in, got, want)
		}
	}
}
