package model

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// Annotations that steer a simulated container regardless of its command.
const (
	// AnnotationExitAfter makes every container of the pod exit after this duration ("5s").
	AnnotationExitAfter = "podtrace.dev/exit-after"
	// AnnotationExitCode is the exit code used with AnnotationExitAfter (default 0).
	AnnotationExitCode = "podtrace.dev/exit-code"
)

// A step is one thing a simulated process does.
type step struct {
	op   string // sleep, log, touch, rm, exit, forever
	d    time.Duration
	arg  string
	code int
}

// program is what a simulated container's main process does: its steps in
// order; if it does not exit or run forever it exits with the last
// command's status when the steps run out.
type program struct {
	steps []step
	// ignoresTerm is true for processes that, as PID 1 without a handler,
	// ignore SIGTERM (a shell or sleep) and must be killed after the grace period.
	ignoresTerm bool
}

// shells whose images have "sh" as their default command, which exits at once without a TTY.
var shellImages = []string{"busybox", "alpine", "ubuntu", "debian", "bash", "fedora", "centos"}

// completing commands finish at once with status 0.
var completing = map[string]bool{"echo": true, "date": true, "true": true, "cat": true, "ls": true,
	"env": true, "printenv": true, "touch": true, "rm": true, "mkdir": true, "cp": true, "mv": true,
	"test": true, "hostname": true, "uname": true, "whoami": true, "id": true, "pwd": true, "[": true}

// parseProgram decides what a container does from (in order of precedence)
// the exit annotations, its command and args, or its image's default command.
//
// Rules (documented for users in the README):
//   - podtrace.dev/exit-after: D (and podtrace.dev/exit-code: C) → run D, exit C;
//   - `sh -c SCRIPT` runs the script's statements: sleep N|infinity, exit N,
//     echo (logged), touch/rm FILE and `echo x > FILE` (visible to exec probes),
//     false (status 1), `while true`/`tail -f` (run forever); other
//     commands are servers and run until stopped;
//   - `sleep N` exits 0 after N seconds, `true`/`echo` exit 0, `false` exits 1;
//   - no command: shell images (busybox, alpine, ubuntu, ...) exit 0 at once,
//     every other image runs its server until stopped.
func parseProgram(image string, command, args []string, ann map[string]string) (program, error) {
	if v, ok := ann[AnnotationExitAfter]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return program{}, fmt.Errorf("annotation %s: %q is not a duration", AnnotationExitAfter, v)
		}
		code := 0
		if c, ok := ann[AnnotationExitCode]; ok {
			if code, err = strconv.Atoi(c); err != nil {
				return program{}, fmt.Errorf("annotation %s: %q is not a number", AnnotationExitCode, c)
			}
		}
		return program{steps: []step{{op: "sleep", d: d}, {op: "exit", code: code}}}, nil
	}
	argv := append(append([]string{}, command...), args...)
	if len(argv) == 0 {
		base := path.Base(strings.SplitN(strings.SplitN(image, "@", 2)[0], ":", 2)[0])
		if i := strings.LastIndex(image, "/"); i >= 0 {
			base = strings.SplitN(strings.SplitN(image[i+1:], "@", 2)[0], ":", 2)[0]
		}
		for _, s := range shellImages {
			if base == s {
				return program{steps: []step{{op: "exit", code: 0}}, ignoresTerm: true}, nil
			}
		}
		return program{steps: []step{{op: "forever"}}}, nil
	}
	if isShell(argv[0]) {
		if len(argv) >= 3 && argv[1] == "-c" {
			return program{steps: parseScript(argv[2]), ignoresTerm: true}, nil
		}
		return program{steps: []step{{op: "exit", code: 0}}, ignoresTerm: true}, nil
	}
	st := parseStatement(argv)
	p := program{steps: st}
	if len(argv) > 0 && path.Base(argv[0]) == "sleep" {
		p.ignoresTerm = true
	}
	return p, nil
}

func isShell(s string) bool {
	switch path.Base(s) {
	case "sh", "bash", "ash", "dash", "zsh":
		return true
	}
	return false
}

// parseScript splits a shell script into statements and their steps.
func parseScript(script string) []step {
	var out []step
	for _, stmt := range splitStatements(script) {
		for _, st := range parseStatement(fields(stmt)) {
			out = append(out, st)
			if st.op == "forever" || st.op == "exit" {
				return out // nothing after runs
			}
		}
	}
	return out
}

// splitStatements splits on ;, &&, || and newlines, keeping quoted text
// whole, and drops empty statements.
func splitStatements(s string) []string {
	var ops []string
	out := splitStatementsOps(s, &ops)
	kept := out[:0]
	for _, st := range out {
		if st = strings.TrimSpace(st); st != "" {
			kept = append(kept, st)
		}
	}
	return kept
}

// fields splits a statement into words, removing quotes.
func fields(s string) []string {
	var out []string
	var cur strings.Builder
	quote, in := byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// parseStatement turns one command into steps.
func parseStatement(argv []string) []step {
	if len(argv) == 0 {
		return nil
	}
	name := path.Base(argv[0])
	rest := argv[1:]
	switch name {
	case "sleep":
		if len(rest) == 0 || rest[0] == "infinity" || rest[0] == "inf" {
			return []step{{op: "forever"}}
		}
		return []step{{op: "sleep", d: parseSeconds(rest[0])}, {op: "status", code: 0}}
	case "exit":
		code := 0
		if len(rest) > 0 {
			code, _ = strconv.Atoi(rest[0])
		}
		return []step{{op: "exit", code: code}}
	case "false":
		return []step{{op: "status", code: 1}}
	case "while", "until", "tail":
		return []step{{op: "forever"}}
	case "do", "done":
		return nil
	case "echo", "printf":
		text := strings.Join(rest, " ")
		if i := strings.Index(text, ">"); i >= 0 {
			file := strings.TrimSpace(strings.TrimLeft(text[i:], ">"))
			return []step{{op: "touch", arg: file, d: 0}, {op: "status", code: 0}}
		}
		return []step{{op: "log", arg: text}, {op: "status", code: 0}}
	case "touch":
		var st []step
		for _, f := range rest {
			st = append(st, step{op: "touch", arg: f})
		}
		return append(st, step{op: "status", code: 0})
	case "rm":
		var st []step
		for _, f := range rest {
			if !strings.HasPrefix(f, "-") {
				st = append(st, step{op: "rm", arg: f})
			}
		}
		return append(st, step{op: "status", code: 0})
	}
	if completing[name] {
		return []step{{op: "status", code: 0}}
	}
	return []step{{op: "forever"}}
}

// parseSeconds reads sleep's argument: "5", "0.5", "5s", "2m".
func parseSeconds(s string) time.Duration {
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second))
	}
	return 0
}

// execResult is the outcome of a simulated exec.
type execResult struct {
	stdout, stderr string
	code           int
	d              time.Duration
}

// execute runs an exec probe's or hook's command against the container's
// files. `cat`, `test -f|-e` and `ls` of a file succeed when the file was
// created earlier; `exit N`, `false`, `sleep N`, `touch`, `rm` and `echo`
// behave as in a shell; any other command succeeds. Statements joined by &&
// stop at the first failure.
func execute(argv []string, files map[string]bool) execResult {
	var stmts [][]string
	var ops []string // the operator before each statement
	if len(argv) >= 3 && isShell(argv[0]) && argv[1] == "-c" {
		script := argv[2]
		for _, st := range splitStatementsOps(script, &ops) {
			stmts = append(stmts, fields(st))
		}
	} else {
		stmts, ops = [][]string{argv}, []string{";"}
	}
	var r execResult
	for i, st := range stmts {
		if i > 0 && ops[i] == "&&" && r.code != 0 {
			continue
		}
		if i > 0 && ops[i] == "||" && r.code == 0 {
			continue
		}
		if len(st) == 0 {
			continue
		}
		name, rest := path.Base(st[0]), st[1:]
		r.code = 0
		switch name {
		case "exit":
			if len(rest) > 0 {
				r.code, _ = strconv.Atoi(rest[0])
			}
			return r
		case "false":
			r.code = 1
		case "sleep":
			if len(rest) > 0 {
				r.d += parseSeconds(rest[0])
			}
		case "touch":
			for _, f := range rest {
				files[f] = true
			}
		case "rm":
			for _, f := range rest {
				delete(files, f)
			}
		case "echo":
			r.stdout += strings.Join(rest, " ") + "\n"
		case "cat", "ls", "test", "[":
			for _, f := range rest {
				if strings.HasPrefix(f, "-") || f == "]" {
					continue
				}
				if !files[f] {
					r.code = 1
					switch name {
					case "cat":
						r.stderr += fmt.Sprintf("cat: can't open '%s': No such file or directory\n", f)
					case "ls":
						r.stderr += fmt.Sprintf("ls: %s: No such file or directory\n", f)
					}
				} else if name == "cat" {
					r.stdout += "ok\n"
				}
			}
		}
	}
	return r
}

// splitStatementsOps splits on ;, &&, || and newlines, keeping quoted text
// whole, and records the operator before each statement (";" for the
// first). Statements are left untrimmed and empty ones kept, so ops stays
// aligned with them.
func splitStatementsOps(s string, ops *[]string) []string {
	var out []string
	*ops = []string{";"}
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
		case c == ';' || c == '\n':
			out = append(out, cur.String())
			*ops = append(*ops, ";")
			cur.Reset()
		case (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c:
			out = append(out, cur.String())
			*ops = append(*ops, string([]byte{c, c}))
			cur.Reset()
			i++
		default:
			cur.WriteByte(c)
		}
	}
	out = append(out, cur.String())
	return out
}
