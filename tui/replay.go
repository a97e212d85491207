package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// ReplaySource replays a recording (the JSON lines `podtrace run
// --headless` prints and `--record` writes: stage events, and the objects'
// rows as kubectl printed them) at the pace it was recorded, scaled by a
// speed that the clock keys change. It is read-only.
type ReplaySource struct {
	name    string
	records []stages.Record
	c       chan stages.Event
	rows    chan stages.Row
	// from is the recorded time before which records play at once.
	from time.Time

	mu      sync.Mutex
	paused  bool
	speed   float64 // 0 means as fast as possible
	skip    bool    // fast-forward: emit the next event now
	changed chan struct{}
}

// ReadRecords parses a recording: stage events and rows, in the order
// written. Blank lines are skipped and a malformed line is reported by
// number.
func ReadRecords(r io.Reader) ([]stages.Record, error) {
	var out []stages.Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(trimSpace(line)) == 0 {
			continue
		}
		var rec stages.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if rec.Row == nil && !rec.Stage.Valid() {
			return nil, fmt.Errorf("line %d: unknown stage %q", n, rec.Stage)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

// ReadEvents parses a recording and returns its stage events alone.
func ReadEvents(r io.Reader) ([]stages.Event, error) {
	recs, err := ReadRecords(r)
	if err != nil {
		return nil, err
	}
	var out []stages.Event
	for _, rec := range recs {
		if rec.Row == nil {
			out = append(out, rec.Event)
		}
	}
	return out, nil
}

// recordTime is when a record happened.
func recordTime(r stages.Record) time.Time {
	if r.Row != nil {
		return r.Row.Time
	}
	return r.Time
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// NewReplaySource reads the whole recording from r. speed is how many
// recorded seconds pass per real second; 0 replays as fast as the UI reads.
func NewReplaySource(name string, r io.Reader, speed float64) (*ReplaySource, error) {
	recs, err := ReadRecords(r)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", name, err)
	}
	return &ReplaySource{name: name, records: recs, c: make(chan stages.Event, 1024),
		rows: make(chan stages.Row, 1024), speed: speed, changed: make(chan struct{})}, nil
}

// From makes what was recorded in the first d play at once: the replay
// opens on the state at d. Call it before Start.
func (s *ReplaySource) From(d time.Duration) {
	if len(s.records) > 0 {
		s.from = recordTime(s.records[0]).Add(d)
	}
}

// Start replays the records on Events and Rows until the end or until ctx
// is done; the channels are closed then.
func (s *ReplaySource) Start(ctx context.Context) {
	go s.run(ctx)
}

// run plays each record when the recording's clock reaches it. Records are
// written as they are read, not strictly in time order (a stage reported
// after a later one started), so the clock only moves forward: a record
// earlier than one already played plays at once, and the whole replay
// takes as long as the recording did.
func (s *ReplaySource) run(ctx context.Context) {
	defer close(s.c)
	defer close(s.rows)
	var played time.Time
	for i, r := range s.records {
		t := recordTime(r)
		if i == 0 || played.Before(s.from) {
			played = t // up to the start point, at once
		}
		if t.After(played) {
			if err := s.wait(ctx, t.Sub(played)); err != nil {
				return
			}
			played = t
		}
		var err error
		if r.Row != nil {
			err = send(ctx, s.rows, *r.Row)
		} else {
			err = send(ctx, s.c, r.Event)
		}
		if err != nil {
			return
		}
	}
}

// send puts v on c unless ctx ends first.
func send[T any](ctx context.Context, c chan<- T, v T) error {
	select {
	case c <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait sleeps d of recorded time, honouring pause, speed changes and fast-forward.
func (s *ReplaySource) wait(ctx context.Context, d time.Duration) error {
	for {
		s.mu.Lock()
		paused, speed, skip, changed := s.paused, s.speed, s.skip, s.changed
		s.skip = false
		s.mu.Unlock()
		if skip || (!paused && (speed == 0 || d <= 0)) {
			return nil
		}
		var timer *time.Timer
		var tick <-chan time.Time
		start := time.Now()
		if !paused {
			timer = time.NewTimer(time.Duration(float64(d) / speed))
			tick = timer.C
		}
		select {
		case <-tick:
			return nil
		case <-changed:
			if timer != nil {
				timer.Stop()
				d -= time.Duration(float64(time.Since(start)) * speed)
			}
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return ctx.Err()
		}
	}
}

func (s *ReplaySource) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

var errReadOnly = errors.New("read-only: this is a recording")

// Name returns "recording NAME".
func (s *ReplaySource) Name() string { return "recording " + s.name }

// Events returns the replayed events.
func (s *ReplaySource) Events() <-chan stages.Event { return s.c }

// Rows returns the replayed objects' rows.
func (s *ReplaySource) Rows() <-chan stages.Row { return s.rows }

// Status returns the read-only marker; a recording has no nodes or etcd to report.
func (s *ReplaySource) Status() Status { return Status{ReadOnly: errReadOnly.Error()} }

// Workloads returns none.
func (s *ReplaySource) Workloads() []Workload { return nil }

// Apply fails: a recording is read-only.
func (s *ReplaySource) Apply([]byte) error { return errReadOnly }

// DeletePod fails: a recording is read-only.
func (s *ReplaySource) DeletePod(string, string) error { return errReadOnly }

// Scale fails: a recording is read-only.
func (s *ReplaySource) Scale(string, string, string, int) error { return errReadOnly }

// PodDetail fails: a recording holds stage events and rows, not the stored objects.
func (s *ReplaySource) PodDetail(string, string) (PodDetail, error) {
	return PodDetail{}, errors.New("a recording holds stage events and rows, not the stored objects")
}

// Faults returns nil: a recording cannot be broken.
func (s *ReplaySource) Faults() FaultControl { return nil }

// Clock returns the replay's pace controls.
func (s *ReplaySource) Clock() ClockControl { return (*replayClock)(s) }

// replayClock is the ClockControl view of a ReplaySource.
type replayClock ReplaySource

// Paused reports whether the replay is paused.
func (c *replayClock) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Speed returns the replay speed (0: as fast as the UI reads).
func (c *replayClock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// SetPaused pauses or resumes the replay.
func (c *replayClock) SetPaused(p bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = p
	(*ReplaySource)(c).notifyLocked()
	return nil
}

// SetSpeed sets how many recorded seconds pass per real second.
func (c *replayClock) SetSpeed(v float64) error {
	if v <= 0 {
		return fmt.Errorf("speed %g: must be positive", v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.speed = v
	(*ReplaySource)(c).notifyLocked()
	return nil
}

// RealTime is false: pause and speed drive the replay's clock.
func (c *replayClock) RealTime() bool { return false }

// FastForward emits the next event at once.
func (c *replayClock) FastForward() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skip = true
	(*ReplaySource)(c).notifyLocked()
	return "the next recorded event plays now", nil
}
