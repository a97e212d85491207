package model

// agnhostImages are the images whose entrypoint is agnhost's /agnhost, by
// their repository's name, and their own command (the Dockerfile's CMD):
// agnhost's (test/images/agnhost) pauses; kitten's and nautilus's
// (test/images/kitten, test/images/nautilus: agnhost's image with a
// picture and data.json) serve their files on port 80.
var agnhostImages = map[string]string{
	"agnhost":  "pause",
	"kitten":   "test-webserver",
	"nautilus": "test-webserver",
}
