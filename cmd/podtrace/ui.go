package main

import (
	"context"
	"fmt"
	"os"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/tui"
)

// runUI opens the terminal UI on the engine, applying manifest first if given.
func runUI(ctx context.Context, e *engine.Engine, manifest []byte, file, theme string) error {
	src, err := newEngineSource(ctx, e)
	if err != nil {
		return err
	}
	if len(manifest) > 0 {
		if _, err := src.applier.Apply(ctx, manifest, file); err != nil {
			return err
		}
	}
	// Printed before the UI takes the screen, and left in the scrollback.
	fmt.Fprintf(os.Stderr, "export KUBECONFIG=%s\n", e.Kubeconfig)
	return tui.Run(ctx, src, tui.Options{Theme: theme, NoColor: os.Getenv("NO_COLOR") != ""})
}
