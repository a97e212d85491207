package proc

import "slices"

// An imageSpec is what the simulation knows of an image: the programs
// beyond busybox's that it has, and its config's Entrypoint and Cmd.
type imageSpec struct {
	programs   []string
	entrypoint []string
	cmd        []string
}

// agnhostPrograms are those of agnhost's image (test/images/agnhost's
// Dockerfile): agnhost (also as agnhost-2, a link to it), dig and curl.
var agnhostPrograms = []string{"agnhost", "agnhost-2", "dig", "curl"}

// knownImages are the images the simulation knows, by their repository's name.
// agnhost's (test/images/agnhost) runs /agnhost and pauses; kitten's and
// nautilus's (test/images/kitten, test/images/nautilus: agnhost's image
// with a picture and data.json) serve their files on port 80; nonewprivs'
// (test/images/nonewprivs) runs nnp. The DNS specs' glibc-dns-testing
// (Debian's dnsutils) and jessie-dnsutils have dig.
var knownImages = map[string]imageSpec{
	"agnhost":           {programs: agnhostPrograms, entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}},
	"kitten":            {programs: agnhostPrograms, entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"}},
	"nautilus":          {programs: agnhostPrograms, entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"}},
	"glibc-dns-testing": {programs: []string{"dig"}},
	"jessie-dnsutils":   {programs: []string{"dig"}},
	"dnsutils":          {programs: []string{"dig"}},
	"curl":              {programs: []string{"curl"}},
	"netshoot":          {programs: []string{"dig", "curl"}},
	"nonewprivs":        {programs: []string{"nnp"}, cmd: []string{"nnp"}},
}

// ImageConfig returns the Entrypoint and Cmd of image's config, as the
// simulation knows them (none for an image it does not know): a container
// whose spec has no command runs the Entrypoint, with the Cmd when its
// spec has no args either.
func ImageConfig(image string) (entrypoint, cmd []string) {
	spec := knownImages[ImageBase(image)]
	return slices.Clone(spec.entrypoint), slices.Clone(spec.cmd)
}

// imageHas reports whether the container's image has the program name.
func (c *commands) imageHas(name string) bool { return imageHas(c.p.Image, name) }

// imageHas reports whether image has the program name.
func imageHas(image, name string) bool {
	return slices.Contains(knownImages[ImageBase(image)].programs, name)
}
