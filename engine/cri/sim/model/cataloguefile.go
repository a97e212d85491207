package model

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// catalogueText is the simulated registries' catalogue (catalogue.txt),
// written by `go run ./hack/imagetags` where the registries can be reached.
//
//go:embed catalogue.txt
var catalogueText string

// CatalogueImage is one image of the simulated registries' catalogue.
type CatalogueImage struct {
	// Name is the normalized repository: "docker.io/library/nginx".
	Name string
	// Size is the unpacked size in bytes that a pull of any of its tags takes.
	Size int64
	// Tags are its published tags; a pull of any other tag is not found.
	Tags []string
}

// catalogueFormat opens every catalogue file: what the file is and how it reads.
var catalogueFormat = []string{
	"The simulated registries' catalogue (engine/cri/sim/model): familiar images,",
	"each on a line \"NAME SIZE\" (normalized repository, unpacked size in bytes),",
	"then its published tags on indented lines. A simulated pull of a tag that is",
	"not listed fails as the registry answers: not found.",
}

// catalogueWidth is where WriteCatalogue wraps a line of tags.
const catalogueWidth = 100

// ParseCatalogue reads a catalogue file: '#' comment lines, and for each
// image a line "NAME SIZE" followed by indented lines of its tags,
// separated by spaces.
func ParseCatalogue(r io.Reader) ([]CatalogueImage, error) {
	var out []CatalogueImage
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if len(out) == 0 {
				return nil, fmt.Errorf("catalogue line %d: tags before any image", n)
			}
			out[len(out)-1].Tags = append(out[len(out)-1].Tags, strings.Fields(line)...)
		default:
			img, err := parseImageLine(line)
			if err != nil {
				return nil, fmt.Errorf("catalogue line %d: %w", n, err)
			}
			out = append(out, img)
		}
	}
	return out, sc.Err()
}

// parseImageLine reads "NAME SIZE".
func parseImageLine(line string) (CatalogueImage, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return CatalogueImage{}, fmt.Errorf("%q is not \"NAME SIZE\"", line)
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || size <= 0 {
		return CatalogueImage{}, fmt.Errorf("%q: the size is not a positive number of bytes", line)
	}
	return CatalogueImage{Name: f[0], Size: size}, nil
}

// WriteCatalogue writes images in the format ParseCatalogue reads: the
// format's description and the provenance lines as comments, then each
// image with its tags deduplicated, in version order and wrapped.
func WriteCatalogue(w io.Writer, provenance []string, images []CatalogueImage) error {
	bw := bufio.NewWriter(w)
	for _, l := range append(slices.Clone(catalogueFormat), provenance...) {
		fmt.Fprintln(bw, strings.TrimRight("# "+l, " "))
	}
	for _, img := range images {
		fmt.Fprintf(bw, "\n%s %d\n", img.Name, img.Size)
		writeTags(bw, SortTags(img.Tags))
	}
	return bw.Flush()
}

// writeTags writes tags on indented lines of at most catalogueWidth columns.
func writeTags(w io.Writer, tags []string) {
	line := ""
	for _, t := range tags {
		if line != "" && len(line)+1+len(t) > catalogueWidth {
			fmt.Fprintln(w, line)
			line = ""
		}
		if line == "" {
			line = "    " + t
		} else {
			line += " " + t
		}
	}
	if line != "" {
		fmt.Fprintln(w, line)
	}
}

// SortTags returns tags without duplicates in version order: runs of
// digits compare as numbers, so 1.9 comes before 1.10 and 1.27 before
// 1.27.0 and 1.27-alpine.
func SortTags(tags []string) []string {
	out := slices.Clone(tags)
	slices.SortFunc(out, compareVersions)
	return slices.Compact(out)
}

// compareVersions compares a and b by runs of digits (as numbers) and of
// other characters (as text).
func compareVersions(a, b string) int {
	for a != "" && b != "" {
		ra, rb := leadingRun(a), leadingRun(b)
		if c := compareRuns(ra, rb); c != 0 {
			return c
		}
		a, b = a[len(ra):], b[len(rb):]
	}
	return len(a) - len(b)
}

// compareRuns compares two runs: numbers by value, a number before text.
func compareRuns(a, b string) int {
	da, db := isDigit(a[0]), isDigit(b[0])
	switch {
	case da && db:
		ta, tb := strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(ta) != len(tb) {
			return len(ta) - len(tb)
		}
		if c := strings.Compare(ta, tb); c != 0 {
			return c
		}
		return len(a) - len(b)
	case da:
		return -1
	case db:
		return 1
	}
	return strings.Compare(a, b)
}

// leadingRun is s's first run of digits, or of other characters.
func leadingRun(s string) string {
	d := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == d {
		i++
	}
	return s[:i]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// catalogueEntry is a catalogue image as resolve looks it up.
type catalogueEntry struct {
	size int64
	tags map[string]bool
}

// catalogue is the embedded catalogue by normalized repository name; a
// file that does not parse is a build mistake the package's tests catch.
var catalogue = sync.OnceValue(func() map[string]catalogueEntry {
	images, err := ParseCatalogue(strings.NewReader(catalogueText))
	if err != nil {
		panic("simulated registries: " + err.Error())
	}
	out := make(map[string]catalogueEntry, len(images))
	for _, img := range images {
		e := catalogueEntry{size: img.Size, tags: make(map[string]bool, len(img.Tags))}
		for _, t := range img.Tags {
			e.tags[t] = true
		}
		out[img.Name] = e
	}
	return out
})
