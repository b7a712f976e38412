package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// generatedDocs are the documents whose numbers -report prints: the
// package's README and the log of attempts behind it. A block
//
//	<!-- go run ./examples/vae -report DIR -->
//	...
//	<!-- end -->
//
// must hold exactly what the command prints (run from the repository
// root), so the tables cannot drift from the committed summaries. Each
// document names the blocks it must hold, so that no table leaves the
// README or the log unnoticed.
var generatedDocs = []struct {
	path string
	want []string // the flags of the blocks it must hold
}{
	{"models/vae/README.md", []string{
		"-report models/vae/results/full",
		"-report models/vae/results/settled",
		"-report models/vae/results/fixed",
	}},
	{"models/vae/results/NOTES.md", []string{
		"-report models/vae/results/settle",
		"-report models/vae/results/ais",
		"-report models/vae/results/tuning",
		"-report models/vae/results/float32",
		"-report models/vae/results/float32 -against models/vae/results/full",
		"-report models/vae/results/float32_eval",
	}},
}

var generatedBlock = regexp.MustCompile(`(?s)<!-- go run \./examples/vae ([^>]*?) -->\n(.*?)<!-- end -->`)

func TestGeneratedDocs(t *testing.T) {
	t.Chdir("../..")
	for _, doc := range generatedDocs {
		data, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, m := range generatedBlock.FindAllStringSubmatch(string(data), -1) {
			found[m[1]] = true
			o, err := parseFlags(strings.Fields(m[1]), io.Discard)
			if err != nil || o.report == "" {
				t.Fatalf("%s: %q: a generated block must come from -report (err %v)", doc.path, m[1], err)
			}
			var out bytes.Buffer
			if err := writeReport(o, &out); err != nil {
				t.Fatalf("%s: go run ./examples/vae %s: %v", doc.path, m[1], err)
			}
			if out.String() != m[2] {
				t.Errorf("%s: the block differs from what `go run ./examples/vae %s` prints now; paste its output:\n%s", doc.path, m[1], out.String())
			}
		}
		for _, w := range doc.want {
			if !found[w] {
				t.Errorf("%s: no generated block of `go run ./examples/vae %s`", doc.path, w)
			}
		}
	}
}
