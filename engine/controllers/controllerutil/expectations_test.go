package controllerutil

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	e := NewExpectations(clk)
	if !e.Satisfied("ns/rs") {
		t.Fatal("unknown key not satisfied")
	}
	e.ExpectCreations("ns/rs", 2)
	e.CreationObserved("ns/rs")
	if e.Satisfied("ns/rs") {
		t.Fatal("satisfied with one creation pending")
	}
	e.CreationObserved("ns/rs")
	if !e.Satisfied("ns/rs") {
		t.Fatal("not satisfied after both creations")
	}
	e.ExpectDeletions("ns/rs", []string{"ns/a", "ns/b"})
	e.DeletionObserved("ns/rs", "ns/a")
	e.DeletionObserved("ns/rs", "ns/a")
	if e.Satisfied("ns/rs") {
		t.Fatal("satisfied with ns/b still expected to go")
	}
	clk.Step(ExpectationsTimeout + time.Second)
	if !e.Satisfied("ns/rs") {
		t.Fatal("expired expectations still block")
	}
	e.Delete("ns/rs")
	if !e.Satisfied("ns/rs") {
		t.Fatal("deleted key not satisfied")
	}
}
