package tui

import (
	"regexp"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"github.com/distribution/reference"

	"github.com/podtrace/podtrace/tui/lanes"
)

// cutCause shortens a row's cause ("Reason: message", or the message
// alone) to at most width cells, keeping the words that say what is wrong
// rather than the start of the text: the image of a failed pull, the quota
// a create exceeded, the user and verb RBAC refused, the scheduler's node
// counts, the object a mount did not find. It tries shorter and shorter
// forms of the text, each in upstream's own words, and takes the first
// that fits; then the same with long quoted names cut in the middle
// ("web-7…f4-2xk9p"); at last it cuts the shortest form at its end.
// Where it cuts inside words it says so with "…"; a shorter form is
// upstream's words without those around them.
func cutCause(text string, width int) string {
	if width <= 0 {
		return ""
	}
	if cells(text) <= width {
		return text
	}
	k := cutKey{text, width}
	cutMemo.Lock()
	defer cutMemo.Unlock()
	if s, ok := cutMemo.m[k]; ok {
		return s
	}
	if len(cutMemo.m) >= 4096 {
		clear(cutMemo.m) // causes long gone: start over
	}
	s := fitForms(causeForms(text), width)
	cutMemo.m[k] = s
	return s
}

// cutMemo keeps the cuts made: a row that changes with time is drawn each
// frame with the same cause at the same width.
var cutMemo = struct {
	sync.Mutex
	m map[cutKey]string
}{m: map[cutKey]string{}}

type cutKey struct {
	text  string
	width int
}

// fitForms returns the first form that fits width; else the first that
// fits with its quoted names cut in the middle, each keeping at least two
// fifths of width; else the last form (the one that starts with what
// matters) cut at its end, after its first quoted name.
func fitForms(forms []string, width int) string {
	for _, f := range forms {
		if cells(f) <= width {
			return f
		}
	}
	floor := max(minQuoted, width*2/5)
	for _, f := range forms {
		if s, ok := cutNames(f, width, floor); ok {
			return s
		}
	}
	return keyCut(forms[len(forms)-1], width)
}

// reasonPrefix is a Kubernetes reason before a message: "FailedMount: ".
var reasonPrefix = regexp.MustCompile(`^([A-Z][A-Za-z]+): `)

// causeForms returns text's forms, from the whole text to the shortest
// that still says what is wrong; the reason (when text has one) goes
// before each form of the message, then the form goes without it.
func causeForms(text string) []string {
	reason, msg := "", text
	if m := reasonPrefix.FindStringSubmatch(text); m != nil {
		reason, msg = m[1], text[len(m[0]):]
	}
	if reason == "Error" { // the kubelet's "Error: ..." says nothing
		reason = ""
	}
	var out []string
	for _, f := range messageForms(msg) {
		if reason != "" {
			out = append(out, reason+": "+f)
		}
		out = append(out, f)
	}
	return dedupe(out)
}

// messageForms returns msg's forms: itself, without boilerplate, then
// those of the first rule that knows msg's kind, else the general ones.
func messageForms(msg string) []string {
	forms := []string{msg}
	s := stripBoilerplate(msg)
	for _, rule := range causeRules {
		if f := rule(msg, s); f != nil {
			return append(forms, f...)
		}
	}
	return append(append(forms, s), chainForms(s)...)
}

// causeRules know the messages whose words matter more than their start.
// Each is given the message and the message without boilerplate, and
// returns its shorter forms, longest first, the last one starting with
// what matters; nil when the message is not of its kind.
var causeRules = []func(msg, s string) []string{schedulingForms, pullForms, quotaForms, rbacForms, notFoundForms}

var (
	rpcPrefix   = regexp.MustCompile(`rpc error: code = \w+ desc = `)
	nodesPrefix = regexp.MustCompile(`^0/\d+ nodes are available: `)
)

// stripBoilerplate drops what every message of its kind shares: what
// lanes.CoreMessage drops (the scheduler's "0/3 nodes are available: " and
// preemption tail, "MountVolume.SetUp failed for volume "v" : ", gRPC's
// "rpc error: code = X desc = "), and every further gRPC prefix, the
// kubelet's "Error: ", the controllers' "Error creating: ", runc's
// trailing ": unknown".
func stripBoilerplate(msg string) string {
	s := rpcPrefix.ReplaceAllString(lanes.CoreMessage("", msg), "")
	for _, p := range []string{"Error: ", "Error creating: "} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimSuffix(s, ": unknown")
}

// schedulingForms: the scheduler's FitError, "0/3 nodes are available:
// 3 Insufficient cpu. preemption: ..." → "3 Insufficient cpu".
func schedulingForms(msg, s string) []string {
	loc := nodesPrefix.FindStringIndex(msg)
	if loc == nil {
		return nil
	}
	return []string{msg[:loc[1]] + s, s}
}

// imageQuote is the image a pull message names: `image "nginx:1.27"`.
var imageQuote = regexp.MustCompile(`image "([^"]+)"`)

// pullForms: the kubelet's and containerd's pull errors, `Failed to pull
// image "nginx:1.277": ... not found` → `"nginx:1.277": not found`.
func pullForms(_, s string) []string {
	if !strings.Contains(s, `image "`) {
		return nil
	}
	loc := imageQuote.FindStringSubmatchIndex(s)
	if loc == nil {
		return nil
	}
	lead, img, rest := s[:loc[0]], s[loc[2]:loc[3]], s[loc[1]:]
	if after, ok := strings.CutPrefix(rest, ": "); ok {
		rest = ": " + pullFailure(after)
	}
	short := familiar(img)
	return []string{s,
		lead + `image "` + img + `"` + rest, lead + `image "` + short + `"` + rest,
		`image "` + short + `"` + rest, `"` + short + `"` + rest}
}

// pullFailure is the last words of a pull's error chain, what went wrong:
// "not found", "i/o timeout", "no such host", "pull access denied".
func pullFailure(chain string) string {
	if strings.Contains(chain, "pull access denied") {
		return "pull access denied"
	}
	segs := strings.Split(chain, ": ")
	return segs[len(segs)-1]
}

// familiar names an image as its user wrote it: "nginx:1.27" for
// "docker.io/library/nginx:1.27".
func familiar(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.FamiliarString(named)
}

// quotaRefusal is ResourceQuota admission's refusal: "exceeded quota: q,
// requested: ..., used: ..., limited: ..." or "failed quota: q: ...".
var quotaRefusal = regexp.MustCompile(`(exceeded|failed) quota: ([^,:\s]+)`)

// quotaForms: `pods "web-1" is forbidden: exceeded quota: compute,
// requested: requests.cpu=500m, ...` → `exceeded quota: compute`.
func quotaForms(_, s string) []string {
	if !strings.Contains(s, " quota: ") && !strings.HasPrefix(s, "exceeded quota: ") {
		return nil
	}
	loc := quotaRefusal.FindStringSubmatchIndex(s)
	if loc == nil {
		return nil
	}
	refusal, name := s[loc[0]:loc[1]], s[loc[4]:loc[5]]
	forms := []string{s, s[loc[0]:]}
	if used := strings.Index(s, ", used: "); used > loc[1] {
		forms = append(forms, s[loc[0]:used]) // exceeded quota: q, requested: ...
	}
	return append(forms, refusal, "quota: "+name)
}

// rbacRefusal is the authorizer's refusal, `User "u" cannot create
// resource "pods"` (or `path "/x"`).
var rbacRefusal = regexp.MustCompile(`User ("[^"]*") cannot (\S+) (?:resource|path) ("[^"]*")`)

// rbacForms: `pods is forbidden: User "u" cannot create resource "pods"
// in API group "" in the namespace "ns"` → `"u" cannot create "pods"`.
func rbacForms(_, s string) []string {
	if !strings.Contains(s, `User "`) {
		return nil
	}
	m := rbacRefusal.FindStringSubmatchIndex(s)
	if m == nil {
		return nil
	}
	user, verb, what := s[m[2]:m[3]], s[m[4]:m[5]], s[m[6]:m[7]]
	return []string{s, s[m[0]:], s[m[0]:m[1]], user + " cannot " + verb + " " + what, user + " cannot " + verb}
}

// notFound is apimachinery's NotFound: `configmap "x" not found`.
var notFound = regexp.MustCompile(`\w+ "[^"]+" not found`)

// notFoundForms: `MountVolume.SetUp failed for volume "v" : configmap "x"
// not found` → `configmap "x" not found`.
func notFoundForms(_, s string) []string {
	if !strings.Contains(s, `" not found`) {
		return nil
	}
	m := notFound.FindString(s)
	if m == "" {
		return nil
	}
	return []string{s, m}
}

// chainForms are the shorter forms of a wrapped error, "a: b: c: d": its
// first words (what failed) and its last (why), "a: …: d", then the last
// alone, "…c: d", "…d".
func chainForms(s string) []string {
	segs := chainSegments(s)
	n := len(segs)
	if n <= 2 {
		return nil
	}
	var forms []string
	for k := n - 2; k >= 1; k-- {
		forms = append(forms, segs[0]+": …: "+strings.Join(segs[n-k:], ": "))
	}
	for k := n - 2; k >= 1; k-- {
		forms = append(forms, "…"+strings.Join(segs[n-k:], ": "))
	}
	return forms
}

// chainSegments splits a wrapped error at ": " outside quotes; a segment
// of one word (`exec`, `"foo"`, an address) stays with the next one, the
// last with the one before, so that a name keeps what is said of it.
func chainSegments(s string) []string {
	var raw []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], ": "):
			raw = append(raw, s[start:i])
			start = i + 2
			i++
		}
	}
	raw = append(raw, s[start:])
	var segs []string
	carry := ""
	for _, seg := range raw {
		word := !strings.Contains(seg, " ")
		if carry != "" {
			seg, carry = carry+": "+seg, ""
		}
		if word {
			carry = seg
			continue
		}
		segs = append(segs, seg)
	}
	if carry != "" {
		if len(segs) == 0 {
			return []string{carry}
		}
		segs[len(segs)-1] += ": " + carry
	}
	return segs
}

// minQuoted is the fewest cells a quoted name is cut to: "web-…2xk9p".
const minQuoted = 9

// quoted returns where s's quoted names are, quotes included.
func quoted(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		j := strings.IndexByte(s[i+1:], '"')
		if j < 0 {
			break
		}
		if j > 0 {
			out = append(out, [2]int{i, i + j + 2})
		}
		i += j + 1
	}
	return out
}

// cutNames cuts the longest quoted names of s in their middle, none to
// fewer than floor cells, until s fits width; it reports whether it does.
func cutNames(s string, width, floor int) (string, bool) {
	for prev := -1; ; {
		sw := cells(s)
		over := sw - width
		if over <= 0 {
			return s, true
		}
		if sw == prev { // no name can give more
			return s, false
		}
		prev = sw
		longest, lw := [2]int{}, floor
		for _, loc := range quoted(s) {
			if w := cells(s[loc[0]+1 : loc[1]-1]); w > lw {
				longest, lw = loc, w
			}
		}
		if lw == floor {
			return s, false
		}
		inner := s[longest[0]+1 : longest[1]-1]
		s = s[:longest[0]+1] + midCut(inner, max(floor, lw-over)) + s[longest[1]-1:]
	}
}

// keyCut cuts s at its end to width cells, keeping its first quoted name
// whole when it fits, else cut in its middle to fill the cells before a
// last "…".
func keyCut(s string, width int) string {
	names := quoted(s)
	if len(names) == 0 {
		return endCut(s, width, 0)
	}
	loc := names[0]
	room := width
	if loc[1] < len(s) {
		room-- // for the "…" after it
	}
	if cells(s[:loc[1]]) <= room {
		return endCut(s, width, loc[1])
	}
	inner := room - cells(s[:loc[0]]) - 2
	if inner < 3 {
		return endCut(s, width, 0)
	}
	name := `"` + midCut(s[loc[0]+1:loc[1]-1], inner) + `"`
	return endCut(s[:loc[0]]+name+s[loc[1]:], width, loc[0]+len(name))
}

// midCut shortens s to w cells by cutting its middle, keeping more of its
// end (where names differ): "system…:deployer".
func midCut(s string, w int) string {
	sw := cells(s)
	if sw <= w {
		return s
	}
	if w < 3 {
		return ansi.Truncate(s, w, "…")
	}
	tail := (w - 1) * 3 / 5
	head := w - 1 - tail
	if plain(s) {
		return s[:head] + "…" + s[len(s)-tail:]
	}
	end := ansi.TruncateLeft(s, sw-tail, "")
	for cut := sw - tail + 1; cells(end) > tail; cut++ { // a wide character across the cut
		end = ansi.TruncateLeft(s, cut, "")
	}
	return ansi.Truncate(s, head, "") + "…" + end
}

// endCut cuts s at its end to width cells, "…" last, at a word's end
// when one is near and not before byte keep.
func endCut(s string, width, keep int) string {
	if cells(s) <= width {
		return s
	}
	if width <= 1 {
		return ansi.Truncate(s, width, "…")
	}
	t := ansi.Truncate(s, width-1, "")
	if next, ok := strings.CutPrefix(s, t); ok && next != "" && next[0] != ' ' {
		if i := strings.LastIndexByte(t, ' '); i >= keep && i > 0 && cells(t[:i]) >= (width-1)*2/3 {
			t = t[:i]
		}
	}
	return strings.TrimRight(t, " :,;") + "…"
}

// cells is s's width on screen, counted fast for printable ASCII and the
// "…" of cuts (one cell each).
func cells(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x20 && c < 0x7f:
			n++
		case strings.HasPrefix(s[i:], "…"):
			n++
			i += len("…") - 1
		default:
			return ansi.StringWidth(s)
		}
	}
	return n
}

func dedupe(forms []string) []string {
	out := forms[:0]
	seen := map[string]bool{}
	for _, f := range forms {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}
