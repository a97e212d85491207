package identity

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadTokens(t *testing.T) {
	tests := []struct {
		name    string
		csv     string
		token   string
		want    *User
		wantErr string
	}{
		{name: "groups in quotes", csv: "abc123,bob,uid-1,\"system:masters,devs\"\n", token: "abc123",
			want: &User{Name: "bob", UID: "uid-1", Groups: []string{"system:masters", "devs"}}},
		{name: "no groups", csv: "t1,alice,2\n", token: "t1", want: &User{Name: "alice", UID: "2"}},
		{name: "leading spaces", csv: "t1, alice, 2\n", token: "t1", want: &User{Name: "alice", UID: "2"}},
		{name: "empty token skipped", csv: ",ghost,9\nt2,real,1\n", token: "t2", want: &User{Name: "real", UID: "1"}},
		{name: "later duplicate wins", csv: "t1,first,1\nt1,second,2\n", token: "t1", want: &User{Name: "second", UID: "2"}},
		{name: "too few columns", csv: "t1,alice\n",
			wantErr: "token file 'tokens.csv' must have at least 3 columns (token, user name, user uid), found 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens, err := ReadTokens(strings.NewReader(tt.csv), "tokens.csv")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, ok := tokens.UserFor(tt.token)
			if !ok {
				t.Fatalf("token %q not found", tt.token)
			}
			if got.Name != tt.want.Name || got.UID != tt.want.UID || !slices.Equal(got.Groups, tt.want.Groups) {
				t.Errorf("user = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTokenFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	users := append(ComponentUsers("node-1", "node-2"), User{Name: "multi", Groups: []string{"a", "b"}})
	first, err := LoadOrCreateTokenFile(path, users...)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `,multi,,"a,b"`) {
		t.Errorf("token file lacks the quoted group column:\n%s", data)
	}

	// A restart with one more node keeps every token and adds one.
	second, err := LoadOrCreateTokenFile(path, ComponentUsers("node-1", "node-2", "node-3")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		a, _ := first.TokenFor(u.Name)
		b, ok := second.TokenFor(u.Name)
		if !ok || a != b {
			t.Errorf("token of %s changed across restart", u.Name)
		}
		got, ok := second.UserFor(b)
		if !ok || got.Name != u.Name || !slices.Equal(got.Groups, u.Groups) {
			t.Errorf("reloaded token of %s authenticates as %+v", u.Name, got)
		}
	}
	tok, ok := second.TokenFor("system:node:node-3")
	if !ok {
		t.Fatal("no token generated for the new node")
	}
	third, err := LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := third.UserFor(tok); !ok || !slices.Equal(got.Groups, []string{"system:nodes"}) {
		t.Errorf("new node token not persisted: %+v %v", got, ok)
	}
}

func TestTokensRejectBadInput(t *testing.T) {
	tokens := NewTokens()
	for _, tc := range []struct {
		token string
		user  User
	}{{"", User{Name: "a"}}, {"x", User{}}, {"a,b", User{Name: "a"}}, {"a b", User{Name: "a"}}} {
		if err := tokens.Add(tc.token, tc.user); err == nil {
			t.Errorf("Add(%q, %q) succeeded", tc.token, tc.user.Name)
		}
	}
}
