// Command tuidemo runs podtrace's UI on a simulated source, or on a recorded
// event stream with -replay FILE. It exists for the UI's end-to-end test and
// for trying the UI without the engine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/podtrace/podtrace/tui"
	"github.com/podtrace/podtrace/tui/internal/demo"
)

func main() {
	replay := flag.String("replay", "", "replay this JSON-lines event file instead of simulating")
	speed := flag.Float64("speed", 1, "replay speed (recorded seconds per second; 0 = as fast as possible)")
	theme := flag.String("theme", "", "theme: dark, light, high-contrast, colorblind")
	flag.Parse()
	if err := run(*replay, *speed, *theme); err != nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		os.Exit(1)
	}
}

func run(replay string, speed float64, theme string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var src tui.Source = demo.New()
	if replay != "" {
		f, err := os.Open(replay)
		if err != nil {
			return fmt.Errorf("open recording: %w", err)
		}
		defer f.Close()
		rs, err := tui.NewReplaySource(replay, f, speed)
		if err != nil {
			return err
		}
		rs.Start(ctx)
		src = rs
	}
	return tui.Run(ctx, src, tui.Options{Theme: theme})
}
