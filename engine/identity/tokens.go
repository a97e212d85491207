package identity

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Tokens is a static table of bearer tokens, like kube-apiserver's
// --token-auth-file. It is safe for concurrent use.
type Tokens struct {
	mu     sync.RWMutex
	byText map[string]User
}

// NewTokens returns an empty token table.
func NewTokens() *Tokens { return &Tokens{byText: map[string]User{}} }

// GenerateTokens returns a table with a new random token for each user.
func GenerateTokens(users ...User) (*Tokens, error) {
	t := NewTokens()
	for _, u := range users {
		if _, err := t.Generate(u); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Add maps token to user, replacing any user the token had.
func (t *Tokens) Add(token string, user User) error {
	if token == "" {
		return errors.New("add token: empty token")
	}
	if user.Name == "" {
		return errors.New("add token: empty user name")
	}
	if strings.ContainsAny(token, " \t\r\n,\"") {
		return fmt.Errorf("add token for %q: token contains whitespace, a comma or a quote", user.Name)
	}
	user.Groups = slices.Clone(user.Groups)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byText[token] = user
	return nil
}

// Generate creates a random token for user, adds it and returns it.
func (t *Tokens) Generate(user User) (string, error) {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generate token for %q: %w", user.Name, err)
	}
	token := hex.EncodeToString(buf)
	if err := t.Add(token, user); err != nil {
		return "", err
	}
	return token, nil
}

// TokenFor returns a token of the user named name (the lexically first, if
// several map to that name).
func (t *Tokens) TokenFor(name string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	found := ""
	for token, u := range t.byText {
		if u.Name == name && (found == "" || token < found) {
			found = token
		}
	}
	return found, found != ""
}

// EnsureUsers generates a token for each user whose name has none yet and
// reports whether anything was added.
func (t *Tokens) EnsureUsers(users ...User) (bool, error) {
	added := false
	for _, u := range users {
		if _, ok := t.TokenFor(u.Name); ok {
			continue
		}
		if _, err := t.Generate(u); err != nil {
			return added, err
		}
		added = true
	}
	return added, nil
}

// UserFor returns the user of token, as kube-apiserver's token file
// authenticator would find it.
func (t *Tokens) UserFor(token string) (User, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for text, u := range t.byText {
		if subtle.ConstantTimeCompare([]byte(text), []byte(token)) == 1 {
			u.Groups = slices.Clone(u.Groups)
			return u, true
		}
	}
	return User{}, false
}

// ReadTokens parses a token file: CSV records token,user,uid[,"group1,group2"],
// as kube-apiserver's --token-auth-file reads it. Records with an empty
// token are skipped; a later duplicate token wins.
func ReadTokens(r io.Reader, name string) (*Tokens, error) {
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	reader.TrimLeadingSpace = true
	t := NewTokens()
	for {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read token file %s: %w", name, err)
		}
		if len(record) < 3 {
			return nil, fmt.Errorf("token file '%s' must have at least 3 columns (token, user name, user uid), found %d", name, len(record))
		}
		if record[0] == "" {
			continue
		}
		u := User{Name: record[1], UID: record[2]}
		if len(record) >= 4 && record[3] != "" {
			u.Groups = strings.Split(record[3], ",")
		}
		if err := t.Add(record[0], u); err != nil {
			return nil, fmt.Errorf("token file %s: %w", name, err)
		}
	}
}

// LoadTokenFile reads the token file at path.
func LoadTokenFile(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open token file: %w", err)
	}
	defer f.Close()
	return ReadTokens(f, path)
}

// WriteTo writes the table as a token file, one record per token, sorted by
// user name and then token.
func (t *Tokens) WriteTo(w io.Writer) (int64, error) {
	t.mu.RLock()
	texts := make([]string, 0, len(t.byText))
	for text := range t.byText {
		texts = append(texts, text)
	}
	sort.Slice(texts, func(i, j int) bool {
		a, b := t.byText[texts[i]], t.byText[texts[j]]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return texts[i] < texts[j]
	})
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	for _, text := range texts {
		u := t.byText[text]
		record := []string{text, u.Name, u.UID}
		if len(u.Groups) > 0 {
			record = append(record, strings.Join(u.Groups, ","))
		}
		if err := cw.Write(record); err != nil {
			t.mu.RUnlock()
			return 0, fmt.Errorf("write token file: %w", err)
		}
	}
	t.mu.RUnlock()
	cw.Flush()
	if err := cw.Error(); err != nil {
		return 0, fmt.Errorf("write token file: %w", err)
	}
	return buf.WriteTo(w)
}

// WriteFile stores the table at path (mode 0600), replacing it atomically.
func (t *Tokens) WriteFile(path string) error {
	var buf bytes.Buffer
	if _, err := t.WriteTo(&buf); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("write token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// LoadOrCreateTokenFile loads the token file at path if it exists, gives a
// new token to every user in users that has none, and writes the file back
// when something was added. This keeps component tokens stable across
// restarts with the same data directory.
func LoadOrCreateTokenFile(path string, users ...User) (*Tokens, error) {
	t, err := LoadTokenFile(path)
	missing := errors.Is(err, os.ErrNotExist)
	switch {
	case missing:
		t = NewTokens()
	case err != nil:
		return nil, err
	}
	added, err := t.EnsureUsers(users...)
	if err != nil {
		return nil, err
	}
	if added || missing {
		if err := t.WriteFile(path); err != nil {
			return nil, err
		}
	}
	return t, nil
}
