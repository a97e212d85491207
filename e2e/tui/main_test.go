package tuie2e

import (
	"os"
	"testing"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

func TestMain(m *testing.M) { os.Exit(podtracebin.Removing(m).Run()) }
