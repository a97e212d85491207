package stages

import (
	"strings"
	"testing"
	"time"
)

func TestEveryLifecycleStageHasVariants(t *testing.T) {
	for _, id := range Lifecycle {
		vs := Variants(id)
		if len(vs) == 0 {
			t.Errorf("stage %s offers no failure variants", id)
		}
		seen := map[string]bool{}
		for _, v := range vs {
			if v.Name == "" || v.Description == "" || seen[v.Name] {
				t.Errorf("stage %s: variant %+v unnamed, undescribed or repeated", id, v)
			}
			seen[v.Name] = true
		}
	}
	for _, id := range Teardown {
		if len(Variants(id)) != 0 {
			t.Errorf("teardown stage %s offers variants it cannot produce", id)
		}
	}
}

func TestResolveVariant(t *testing.T) {
	tests := []struct {
		in      string
		want    Fault
		wantErr string
	}{
		{in: "pull:fail:not-found", want: Fault{Stage: Pull, Kind: Fail, Variant: "not-found"}},
		{in: "pull:fail", want: Fault{Stage: Pull, Kind: Fail}},
		{in: "pull:fail:slow", want: Fault{Stage: Pull, Kind: Delay, Delay: 45 * time.Second}},
		{in: "reconcile:fail:controller-down", want: Fault{Stage: Reconcile, Kind: Hang, Variant: "controller-down"}},
		{in: "cni:flake:2,ipam-exhausted", want: Fault{Stage: CNI, Kind: Flake, Count: 2, Variant: "ipam-exhausted"}},
		{in: "pull:delay:3s", want: Fault{Stage: Pull, Kind: Delay, Delay: 3 * time.Second}},
		{in: "pull:fail:typo", wantErr: `stage pull has no variant "typo" (want one of not-found, unauthorized, unreachable, slow)`},
		{in: "terminate:fail:x", wantErr: "stage terminate has no failure variants"},
		{in: "pull:flake:2,slow", wantErr: "variant slow of stage pull is a delay, not a failure: use pull:fail:slow"},
	}
	for _, tt := range tests {
		f, err := ParseFault(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ResolveVariant(f)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestLookupVariantDefault(t *testing.T) {
	v, ok := LookupVariant(CNI, "")
	if !ok || v.Name != "ipam-exhausted" {
		t.Fatalf("default cni variant %+v %v", v, ok)
	}
	if _, ok := LookupVariant(Terminate, ""); ok {
		t.Fatal("terminate has a default variant")
	}
}
