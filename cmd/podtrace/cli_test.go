package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/version"
)

// commandPaths lists every command of the tree, cobra's help and
// completion commands included, as argument lists ("scenario hint").
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	out := [][]string{prefix}
	for _, sub := range c.Commands() {
		out = append(out, commandPaths(sub, append(append([]string{}, prefix...), sub.Name()))...)
	}
	return out
}

// TestHelpOnEveryCommand runs `COMMAND --help` and `-h` for every command:
// exit 0, the usage on stdout, nothing on stderr.
func TestHelpOnEveryCommand(t *testing.T) {
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	paths := commandPaths(root, nil)
	if len(paths) < 16 {
		t.Fatalf("only %d commands found: %v", len(paths), paths)
	}
	for _, path := range paths {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, path...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := execute(context.Background(), args, &stdout, &stderr)
				if code != 0 || !strings.Contains(stdout.String(), "Usage:") || stderr.Len() != 0 {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
				}
			})
		}
	}
}

func TestVersionAndCompletion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "kubernetes " + version.Kubernetes + "\n"},
		{[]string{"completion", "bash"}, "# bash completion V2 for podtrace"},
		{[]string{"completion", "zsh"}, "#compdef podtrace"},
		{[]string{"completion", "fish"}, "# fish completion for podtrace"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := execute(context.Background(), tt.args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q, stdout without %q:\n%.300s", code, stderr.String(), tt.want, stdout.String())
			}
		})
	}
	var stdout bytes.Buffer
	execute(context.Background(), []string{"version"}, &stdout, &stdout)
	if !strings.HasPrefix(stdout.String(), "podtrace ") {
		t.Errorf("version: %q", stdout.String())
	}
	// --version prints the same and starts no cluster (that would take
	// seconds and print nothing like it).
	var flagOut, flagErr bytes.Buffer
	if code := execute(context.Background(), []string{"--version"}, &flagOut, &flagErr); code != 0 || flagOut.String() != stdout.String() || flagErr.Len() != 0 {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want %q", code, flagOut.String(), flagErr.String(), stdout.String())
	}
}

// TestCommandLineErrors: one line on stderr, exit 1, for mistakes cobra
// and pflag catch.
func TestCommandLineErrors(t *testing.T) {
	// A command that fails leaves no temporary data dir behind.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"nonsense"}, `podtrace: unknown command "nonsense" for "podtrace"`},
		{[]string{"run", "--bogus"}, "podtrace: unknown flag: --bogus (see 'podtrace run --help')"},
		{[]string{"serve", "extra"}, `podtrace: unexpected argument "extra"`},
		{[]string{"run", "--fault", "nope"}, `podtrace: invalid argument "nope" for "--fault" flag: `},
		{[]string{"attach", "a", "b"}, "podtrace: accepts at most 1 arg(s), received 2"},
		{[]string{"run", "-f", "no-such-file.yaml", "--headless"}, `podtrace: the path "no-such-file.yaml" does not exist`},
		{[]string{"kubeconfig"}, "podtrace: kubeconfig needs --data-dir"},
		{[]string{"serve", "--registry-mirror", "http://127.0.0.1:5000"}, "podtrace: --registry-mirror needs --runtime containerd (the simulated runtime pulls nothing)"},
		{[]string{"serve", "--runtime", "containerd", "--registry-mirror", "127.0.0.1:5000"}, `podtrace: --registry-mirror "127.0.0.1:5000": want an http or https URL, e.g. http://127.0.0.1:5000`},
		{[]string{"serve", "--runtime", "docker"}, `podtrace: --runtime "docker": want sim or containerd`},
		{[]string{"serve", "--e2e-images"}, "podtrace: --e2e-images needs --runtime containerd (the simulated runtime runs no image's program)"},
		{[]string{"serve", "--max-container-restart-period", "5ms"}, "podtrace: --max-container-restart-period 5ms: want at least 1s"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), tt.args, &stdout, &stderr)
			if code != 1 || !strings.HasPrefix(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q, want one line starting %q", code, stderr.String(), tt.want)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("left %s in the temporary directory", left[0].Name())
			}
		})
	}
}
