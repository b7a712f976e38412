package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generatedDocs are the documents whose numbers this command prints. A
// block
//
//	<!-- go run ./examples/celegans ARGS -->
//	...
//	<!-- end -->
//
// must hold exactly what the command prints with ARGS (run from the
// repository root): -report recomputes the tables from committed results
// files, so prose and numbers cannot drift apart.
var generatedDocs = []string{"README.md", "celegans/README.md", "celegans/tuning/README.md", "celegans/results/port-check/README.md", "celegans/results/tables/README.md", "celegans/results/tables-engines-plain/README.md"}

var generatedBlock = regexp.MustCompile(`(?s)<!-- go run \./examples/celegans ([^>]*?) -->\n(.*?)<!-- end -->`)

func TestGeneratedDocs(t *testing.T) {
	t.Chdir("../..")
	blocks := 0
	for _, doc := range generatedDocs {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range generatedBlock.FindAllStringSubmatch(string(data), -1) {
			blocks++
			args := strings.Fields(m[1])
			require.Contains(t, args, "-report", "%s: a generated block must come from -report (it may not run experiments): %q", doc, m[1])
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			require.Equal(t, 0, code, "%s: go run ./examples/celegans %s: %s", doc, m[1], stderr.String())
			assert.Equal(t, stdout.String(), m[2], "%s: the block differs from what `go run ./examples/celegans %s` prints now; paste its output", doc, m[1])
		}
	}
	assert.Positive(t, blocks, "no generated blocks in %v", generatedDocs)
}
