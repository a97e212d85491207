package engine_test

import (
	"testing"

	"github.com/podtrace/podtrace/engine/enginetest"
)

func TestMain(m *testing.M) { enginetest.MainOwnProcesses(m) }
