package model

import (
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// Annotations that steer a simulated container regardless of its command.
const (
	// AnnotationExitAfter makes every container of the pod exit after this duration ("5s").
	AnnotationExitAfter = "podtrace.dev/exit-after"
	// AnnotationExitCode is the exit code used with AnnotationExitAfter (default 0).
	AnnotationExitCode = "podtrace.dev/exit-code"
)

// A step is one thing a simulated process does when no command says what
// (an image's default command, the exit annotations).
type step struct {
	op   string // sleep, exit, forever
	d    time.Duration
	code int
}

// Program is what a simulated container's main process does: its command
// (Argv, run by engine/cri/sim/proc), or else steps (see Play).
type Program struct {
	// Argv is the command the process runs; nil when it plays steps.
	Argv  []string
	steps []step
	// IgnoresTerm is true for processes that, as PID 1 without a handler,
	// ignore SIGTERM (a shell or sleep) and must be killed after the grace period.
	IgnoresTerm bool
}

// Play plays a program without a command: sleep waits on the runtime's
// clock and returns false when the container was stopped meanwhile. It
// returns the exit code, and whether the program exits by itself (not for
// a server, which runs until stopped, nor when stopped).
func (p Program) Play(sleep func(time.Duration) bool) (code int, exits bool) {
	for _, st := range p.steps {
		switch st.op {
		case "sleep":
			if !sleep(st.d) {
				return 0, false
			}
		case "exit":
			return st.code, true
		case "forever":
			return 0, false
		}
	}
	return 0, true
}

// shells whose images have "sh" as their default command, which exits at once without a TTY.
var shellImages = []string{"busybox", "alpine", "ubuntu", "debian", "bash", "fedora", "centos"}

// ParseProgram decides what a container does from (in order of precedence)
// the exit annotations, its command and args, or its image's default command.
//
// Rules (documented for users in the README):
//   - podtrace.dev/exit-after: D (and podtrace.dev/exit-code: C) → run D, exit C;
//   - a command runs as engine/cri/sim/proc runs it: shell scripts
//     interpreted, common commands simulated against the container's files
//     and environment, any other command a server that runs until stopped;
//   - no command: an image the simulation knows (proc.ImageConfig) runs
//     its entrypoint with the arguments, or with its own command when
//     there are none: agnhost's image (and kitten's and nautilus's, built
//     on it) /agnhost with "pause" (kitten's and nautilus's
//     "test-webserver"), nonewprivs' nnp;
//     other images run the arguments;
//   - no command: shell images (busybox, alpine, ubuntu, ...) exit 0 at once,
//     every other image runs its server until stopped.
func ParseProgram(image string, command, args []string, ann map[string]string) (Program, error) {
	if v, ok := ann[AnnotationExitAfter]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return Program{}, fmt.Errorf("annotation %s: %q is not a duration", AnnotationExitAfter, v)
		}
		code := 0
		if c, ok := ann[AnnotationExitCode]; ok {
			if code, err = strconv.Atoi(c); err != nil {
				return Program{}, fmt.Errorf("annotation %s: %q is not a number", AnnotationExitCode, c)
			}
		}
		return Program{steps: []step{{op: "sleep", d: d}, {op: "exit", code: code}}}, nil
	}
	if len(command) == 0 {
		entrypoint, cmd := proc.ImageConfig(image)
		command = entrypoint
		if len(args) == 0 {
			args = cmd
		}
	}
	argv := append(append([]string{}, command...), args...)
	if len(argv) == 0 {
		base := proc.ImageBase(image)
		for _, s := range shellImages {
			if base == s {
				return Program{steps: []step{{op: "exit", code: 0}}, IgnoresTerm: true}, nil
			}
		}
		return Program{steps: []step{{op: "forever"}}}, nil
	}
	return Program{Argv: argv, IgnoresTerm: proc.IsShell(argv[0]) || path.Base(argv[0]) == "sleep"}, nil
}
