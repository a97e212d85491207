package otlp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// ids are the trace ID and root span ID of one object's trace.
type ids struct {
	trace trace.TraceID
	root  trace.SpanID
}

// idsFor derives an object's IDs, so that they are the same in every run
// and every podtrace watching it: the trace ID is the object's UID when it
// is a UUID (as the API server makes them: search for a pod's trace by its
// UID without the dashes), else a hash of its kind, namespace, name and
// UID; the root span ID is a hash of the trace ID.
func idsFor(kind, namespace, name, uid string) ids {
	var out ids
	if b, err := hex.DecodeString(strings.ReplaceAll(uid, "-", "")); err == nil && len(b) == len(out.trace) {
		copy(out.trace[:], b)
	} else {
		sum := sha256.Sum256([]byte(kind + "/" + namespace + "/" + name + "/" + uid))
		copy(out.trace[:], sum[:])
	}
	sum := sha256.Sum256(append([]byte("root/"), out.trace[:]...))
	copy(out.root[:], sum[:])
	return out
}

type idsKey struct{}

// withIDs makes the next root span started with ctx take the IDs given.
func withIDs(ctx context.Context, i ids) context.Context { return context.WithValue(ctx, idsKey{}, i) }

// idGenerator gives a root span the IDs its context carries (see withIDs)
// and every other span a random span ID.
type idGenerator struct{}

// NewIDs returns the IDs ctx carries, or random ones.
func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if i, ok := ctx.Value(idsKey{}).(ids); ok {
		return i.trace, i.root
	}
	var t trace.TraceID
	_, _ = rand.Read(t[:])
	return t, idGenerator{}.NewSpanID(ctx, t)
}

// NewSpanID returns a random, valid span ID.
func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return s
}
