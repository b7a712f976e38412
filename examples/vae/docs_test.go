package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// generatedDocs are the documents whose numbers -report prints. A block
//
//	<!-- go run ./examples/vae -report DIR -->
//	...
//	<!-- end -->
//
// must hold exactly what the command prints (run from the repository
// root), so the tables cannot drift from the committed summaries.
var generatedDocs = []string{"models/vae/README.md"}

var generatedBlock = regexp.MustCompile(`(?s)<!-- go run \./examples/vae ([^>]*?) -->\n(.*?)<!-- end -->`)

func TestGeneratedDocs(t *testing.T) {
	t.Chdir("../..")
	blocks := 0
	for _, doc := range generatedDocs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range generatedBlock.FindAllStringSubmatch(string(data), -1) {
			blocks++
			o, err := parseFlags(strings.Fields(m[1]), io.Discard)
			if err != nil || o.report == "" {
				t.Fatalf("%s: %q: a generated block must come from -report (err %v)", doc, m[1], err)
			}
			var out bytes.Buffer
			if err := writeReport(o, &out); err != nil {
				t.Fatalf("%s: go run ./examples/vae %s: %v", doc, m[1], err)
			}
			if out.String() != m[2] {
				t.Errorf("%s: the block differs from what `go run ./examples/vae %s` prints now; paste its output:\n%s", doc, m[1], out.String())
			}
		}
	}
	if blocks == 0 {
		t.Errorf("no generated blocks in %v", generatedDocs)
	}
}
