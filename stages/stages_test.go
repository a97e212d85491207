package stages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestOrder(t *testing.T) {
	if !Authn.Before(Bind) || !Bind.Before(Ready) || !Ready.Before(Terminate) {
		t.Fatal("lifecycle order broken")
	}
	if len(All) != 18 {
		t.Fatalf("want 18 stages, got %d", len(All))
	}
	for _, id := range All {
		if id.Describe().Summary == "" {
			t.Errorf("stage %s has no description", id)
		}
	}
	if ID("nope").Valid() {
		t.Fatal("unknown stage reported valid")
	}
}

func TestEventJSONFieldNames(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	b, err := json.Marshal(Event{Time: ts, Namespace: "default", Pod: "web-1", UID: "u1", Stage: Schedule,
		Status: Failed, Component: "kube-scheduler", Attempt: 2, DurationMs: 1.5, Reason: "FailedScheduling",
		Message: "0/3 nodes are available", User: "system:kube-scheduler", Node: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{`"time":"2026-01-02T03:04:05.123456789Z"`, `"namespace":"default"`, `"pod":"web-1"`,
		`"uid":"u1"`, `"stage":"schedule"`, `"status":"failed"`, `"component":"kube-scheduler"`, `"node":"node-1"`,
		`"attempt":2`, `"durationMs":1.5`, `"reason":"FailedScheduling"`, `"message":"0/3 nodes are available"`,
		`"user":"system:kube-scheduler"`} {
		if !strings.Contains(got, want) {
			t.Errorf("event JSON %s lacks %s", got, want)
		}
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		in      string
		want    Fault
		wantErr string
	}{
		{in: "pull:fail:not-found@pod/default/web", want: Fault{Stage: Pull, Kind: Fail, Variant: "not-found", Scope: Scope{Pod: "default/web"}}},
		{in: "schedule:hang", want: Fault{Stage: Schedule, Kind: Hang}},
		{in: "cni:delay:2s@node/node-1", want: Fault{Stage: CNI, Kind: Delay, Delay: 2 * time.Second, Scope: Scope{Node: "node-1"}}},
		{in: "start:flake:3,crash@pod/web", want: Fault{Stage: Start, Kind: Flake, Count: 3, Variant: "crash", Scope: Scope{Pod: "default/web"}}},
		{in: "persist:flake", want: Fault{Stage: Persist, Kind: Flake, Count: 1}},
		{in: "bogus:fail", wantErr: "unknown stage"},
		{in: "pull:explode", wantErr: "unknown kind"},
		{in: "pull", wantErr: "want STAGE:KIND"},
		{in: "pull:delay", wantErr: "needs a duration"},
		{in: "pull:flake:zero", wantErr: "not a positive number"},
		{in: "pull:fail@rack/1", wantErr: "unknown scope"},
	}
	for _, tt := range tests {
		got, err := ParseFault(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseFault(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if back, err := ParseFault(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q via %q = %+v, %v", tt.in, got.String(), back, err)
		}
	}
}

func TestScopeMatches(t *testing.T) {
	if !(Scope{}).Matches("a/b", "n1") {
		t.Fatal("zero scope must match every pod")
	}
	if (Scope{Pod: "a/b"}).Matches("a/c", "n1") || !(Scope{Pod: "a/b"}).Matches("a/b", "") {
		t.Fatal("pod scope")
	}
	if (Scope{Node: "n1"}).Matches("a/b", "n2") || !(Scope{Node: "n1"}).Matches("x/y", "n1") {
		t.Fatal("node scope")
	}
}

func TestRecordJSON(t *testing.T) {
	row := Record{Row: &Row{Kind: KindPod, Namespace: "ns", Name: "web", Status: "Running", Ready: "1/1"}}
	ev := Record{Event: Event{Namespace: "ns", Pod: "web", Stage: Pull, Status: Started}}
	for _, in := range []Record{row, ev} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out Record
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if (in.Row == nil) != (out.Row == nil) || in.Row != nil && !reflect.DeepEqual(*in.Row, *out.Row) || in.Event.Stage != out.Event.Stage {
			t.Errorf("%s came back as %+v", b, out)
		}
	}
	if b, _ := json.Marshal(row); strings.Contains(string(b), "stage") {
		t.Errorf("a row line carries an event's fields: %s", b)
	}
}

// Every stage has its one row in the table: who does it, what happens, and
// a two-letter and a short label that no other stage shares.
func TestEveryStageIsDescribed(t *testing.T) {
	short, medium := map[string]ID{}, map[string]ID{}
	for _, id := range All {
		in := id.Describe()
		if in.Component == "" || in.Summary == "" {
			t.Errorf("%s: no component or summary: %+v", id, in)
		}
		if len(in.Short) != 2 || len(in.Medium) == 0 || len(in.Medium) > 4 {
			t.Errorf("%s: labels %q and %q, want 2 and at most 4 letters", id, in.Short, in.Medium)
		}
		if other, ok := short[in.Short]; ok {
			t.Errorf("%s and %s share the label %q", id, other, in.Short)
		}
		if other, ok := medium[in.Medium]; ok {
			t.Errorf("%s and %s share the label %q", id, other, in.Medium)
		}
		short[in.Short], medium[in.Medium] = id, id
	}
}
