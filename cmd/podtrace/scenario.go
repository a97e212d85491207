package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/scenario"
	"github.com/podtrace/podtrace/source/stream"
	"github.com/podtrace/podtrace/stages"
)

// exitNotAsDocumented is the exit code of `scenario NAME --headless --check`
// when the scenario did not behave as its file documents.
const exitNotAsDocumented = 2

// newScenarioCmd builds `podtrace scenario` and its list, hint and
// explain subcommands.
func newScenarioCmd() *cobra.Command {
	var (
		cf       clusterFlags
		headless bool
		check    bool
		timeout  time.Duration
		theme    string
	)
	c := &cobra.Command{
		Use:   "scenario NAME|FILE [flags]",
		Short: "Workshop scenarios: a story, a broken cluster, a goal to reach",
		Long: `Run a workshop scenario, built in (podtrace scenario list) or from a file:
the story, then the broken cluster in the UI. With --headless, print stage
events until the goal holds; with --headless --check, check that the scenario
behaves as documented, apply its fix, and exit 0 when the goal then holds.`,
		Example: `  podtrace scenario list
  podtrace scenario image-typo
  podtrace scenario image-typo --headless --check
  podtrace scenario hint image-typo 2
  podtrace scenario explain image-typo`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			s, err := scenario.Lookup(args[0])
			if err != nil {
				return err
			}
			if check && !headless {
				return errors.New("--check needs --headless")
			}
			if ran, err := cf.enterPodNetwork(); ran {
				return err
			}
			if !c.Flags().Changed("max-container-restart-period") {
				cf.maxRestart = s.MaxContainerRestartPeriod // the scenario's pace for crash loops
			}
			if check && !c.Flags().Changed("speed") {
				cf.speed = 10 // a check has nobody watching: run the simulated runtime fast
			}
			ctx := c.Context()
			if !headless {
				return scenarioUI(ctx, &cf, s, theme)
			}
			e, cleanup, err := cf.startNodes(ctx, s.Nodes) // the scenario brings its nodes
			if err != nil {
				return err
			}
			defer cleanup()
			if check {
				rep, err := scenario.Check(ctx, e, s, scenario.CheckOptions{Timeout: timeout, Log: terminal})
				if err != nil {
					return &exitError{code: exitNotAsDocumented, err: err}
				}
				fmt.Printf("scenario %s behaves as documented\n  broken: %s\n  fixed:  %s\n", s.Name, rep.Broken, rep.Fixed)
				return nil
			}
			return scenarioHeadless(ctx, e, s, timeout)
		},
	}
	cf.register(c.Flags(), 3)
	c.Flags().BoolVar(&headless, "headless", false, "no UI: print stage events as JSON lines on stdout")
	c.Flags().BoolVar(&check, "check", false, "with --headless: check the documented behaviour, apply the fix, exit 0 when the goal then holds")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long (headless)")
	c.Flags().StringVar(&theme, "theme", "dark", "UI theme: dark, light, high-contrast, colorblind")
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios",
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return listScenarios(os.Stdout) },
	}, &cobra.Command{
		Use:   "hint NAME|FILE [N]",
		Short: "Print the first N graded hints (default 1)",
		Args:  cobra.RangeArgs(1, 2),
		RunE:  func(_ *cobra.Command, args []string) error { return showScenario(os.Stdout, "hint", args) },
	}, &cobra.Command{
		Use:   "explain NAME|FILE",
		Short: "Print what was wrong, and the documented fix",
		Args:  cobra.ExactArgs(1),
		RunE:  func(_ *cobra.Command, args []string) error { return showScenario(os.Stdout, "explain", args) },
	})
	return c
}

// listScenarios prints the built-in scenarios, one a line.
func listScenarios(w io.Writer) error {
	all, err := scenario.Builtin()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTITLE")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Title)
	}
	return tw.Flush()
}

// showScenario prints the first N hints, or the explanation and the fix.
func showScenario(w io.Writer, what string, args []string) error {
	if len(args) == 0 || len(args) > 2 || (what == "explain" && len(args) > 1) {
		return fmt.Errorf("usage: podtrace scenario hint NAME [N] | podtrace scenario explain NAME")
	}
	s, err := scenario.Lookup(args[0])
	if err != nil {
		return err
	}
	if what == "explain" {
		fmt.Fprintf(w, "%s\n\n%s\n\nFix: %s\n\n%s", s.Title, s.Explanation, s.Fix.Description, fixSteps(s))
		return nil
	}
	n := 1
	if len(args) == 2 {
		if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
			return fmt.Errorf("hint number %q: want 1 to %d", args[1], len(s.Hints))
		}
	}
	for i, h := range s.Hints[:min(n, len(s.Hints))] {
		fmt.Fprintf(w, "Hint %d of %d: %s\n", i+1, len(s.Hints), h)
	}
	return nil
}

// fixSteps is the fix as a participant does it: the kubectl commands to
// paste into a shell, or the keys that remove the faults in the UI.
func fixSteps(s *scenario.Scenario) string {
	var b strings.Builder
	if s.Fix.RemoveFaults {
		b.WriteString("In the UI: f opens the fault menu on the active fault; Enter removes it (repeat for each fault).\n")
	}
	if s.Fix.Apply != "" {
		fmt.Fprintf(&b, "kubectl apply -f - <<'EOF'\n%s\nEOF\n", strings.TrimRight(s.Fix.Apply, "\n"))
	}
	if a := s.Fix.Annotate; a != nil {
		b.WriteString(a.Kubectl() + "\n")
	}
	if r := s.Fix.Restart; r != nil {
		b.WriteString(r.Kubectl() + "\n")
	}
	return b.String()
}

// writeManifest saves the scenario's (broken) manifest next to the
// kubeconfig, for the learner to edit and apply again.
func writeManifest(e *engine.Engine, s *scenario.Scenario) (string, error) {
	path := filepath.Join(filepath.Dir(e.Kubeconfig), s.Name+".yaml")
	if err := os.WriteFile(path, []byte(s.Manifest), 0o644); err != nil {
		return "", fmt.Errorf("write the scenario manifest: %w", err)
	}
	return path, nil
}

// briefing is what the learner reads before the cluster is shown.
func briefing(s *scenario.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n\n%s\n\nGoal: %s.\n", s.Title, strings.Repeat("=", len(s.Title)), s.Story, s.Goal.Description)
	return b.String()
}

// scenarioHeadless breaks the cluster and prints stage events as JSON lines
// until the goal holds (exit 0) or timeout passes (exit 3); the learner
// works on it through the kubeconfig printed on stderr.
func scenarioHeadless(ctx context.Context, e *engine.Engine, s *scenario.Scenario, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	manifest, err := writeManifest(e, s)
	if err != nil {
		return err
	}
	fmt.Fprint(terminal, briefing(s))
	fmt.Fprintf(terminal, "The manifest applied is %s.\nexport KUBECONFIG=%s\n", manifest, e.Kubeconfig)
	printed := stream.Print(os.Stdout, e.Hub, nil) // engine.Start returned with every node Ready
	defer printed.Stop()
	if err := s.Prepare(ctx, e); err != nil {
		return err
	}
	err = waitGoal(ctx, e, s, time.Second, func(detail string) {
		announceGoal(ctx, e, s, detail)
		printed.Flush()
		fmt.Fprintf(terminal, "goal met: %s\n\n%s\n", detail, s.Explanation)
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return &exitError{code: exitTimeout, err: fmt.Errorf("timed out after %s: the goal (%s) does not hold", timeout, s.Goal.Description)}
	}
	return err
}

// waitGoal checks the goal every period until it holds, then calls met.
func waitGoal(ctx context.Context, e *engine.Engine, s *scenario.Scenario, period time.Duration, met func(detail string)) error {
	c := e.AdminClient()
	for {
		if ok, detail, err := s.Goal.Check(ctx, c); err == nil && ok {
			met(detail)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(period):
		}
	}
}

// announceGoal reports the goal met on the goal object's lane (a stage
// event) and as a Normal Event on the object, which the UI's events pane
// and kubectl get events show.
func announceGoal(ctx context.Context, e *engine.Engine, s *scenario.Scenario, detail string) {
	kind, name, apiVersion := stages.KindDeployment, s.Goal.Deployment, "apps/v1"
	if s.Goal.Pod != "" {
		kind, name, apiVersion = stages.KindPod, s.Goal.Pod, "v1"
	}
	msg := fmt.Sprintf("scenario %s solved: %s (%s)", s.Name, s.Goal.Description, detail)
	e.Tracer.Emit(stages.Event{Kind: kind, Namespace: s.Goal.Namespace, Pod: name, Stage: stages.Ready,
		Status: stages.Succeeded, Component: "podtrace-scenario", Reason: "GoalMet", Message: msg})
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", name, now.UnixNano()), Namespace: s.Goal.Namespace}, // as client-go's recorder names them
		InvolvedObject: corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: s.Goal.Namespace, Name: name},
		Reason:         "GoalMet", Message: msg, Type: corev1.EventTypeNormal, Count: 1,
		Source:         corev1.EventSource{Component: "podtrace-scenario"},
		FirstTimestamp: now, LastTimestamp: now,
	}
	_, _ = e.AdminClient().CoreV1().Events(s.Goal.Namespace).Create(ctx, ev, metav1.CreateOptions{}) // the stage event already told
}
