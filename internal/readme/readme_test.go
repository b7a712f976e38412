package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/internal/layers"
)

const root = "../.."

// section returns the text of the README's section with the given "## "
// heading, up to the next such heading.
func section(t *testing.T, readme, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}

// tableRows returns the cells of the rows of the first markdown table in
// text, without its header and separator rows.
func tableRows(text string) [][]string {
	var lines []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "|") {
			lines = append(lines, line)
		} else if len(lines) > 0 {
			break
		}
	}
	if len(lines) < 2 {
		return nil
	}
	var rows [][]string
	for _, line := range lines[2:] {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestPackageTable checks the README's package table: every package it
// names exists, every package of the module outside internal/ is in it,
// and it lists them from the lowest layer up.
func TestPackageTable(t *testing.T) {
	pkgs, err := layers.Packages(root)
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(section(t, readme(t), "Packages"))
	if len(rows) < 10 {
		t.Fatalf("the package table has %d rows", len(rows))
	}
	covered := map[string]bool{}
	prev := -1
	for _, row := range rows {
		names := backticked.FindAllStringSubmatch(row[0], -1)
		if len(names) == 0 {
			t.Errorf("row %q names no package", row[0])
			continue
		}
		rowLayer := -1
		for _, m := range names {
			name := m[1]
			var matched []string
			if dir, ok := strings.CutSuffix(name, "/…"); ok {
				for p := range pkgs {
					if strings.HasPrefix(p, dir+"/") {
						matched = append(matched, p)
					}
				}
			} else if _, ok := pkgs[name]; ok {
				matched = []string{name}
			}
			if len(matched) == 0 {
				t.Errorf("the package table names %s, which is no package of the module", name)
				continue
			}
			for _, p := range matched {
				covered[p] = true
				l, _, ok := layers.Of(p)
				if !ok {
					t.Errorf("%s is in no layer", p)
				}
				rowLayer = max(rowLayer, l)
			}
		}
		if rowLayer < prev {
			t.Errorf("row %q (layer %d) comes after a row of layer %d: the table must list the packages from the lowest layer up", row[0], rowLayer, prev)
		}
		prev = max(prev, rowLayer)
	}
	var missing []string
	for p := range pkgs {
		if !covered[p] && !strings.HasPrefix(p, "internal/") {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the package table lacks %v", missing)
	}
}

var (
	number = regexp.MustCompile(`\d*\.\d+%?|\d+(?:\.\d+)?%`)
	link   = regexp.MustCompile(`\]\(([^)#]+)`)
)

// TestResultsTable checks that every number in the "ours" and "paper's"
// columns of the README's results table appears in the README that its row
// links, where the tests of that package check it against the committed
// results files.
func TestResultsTable(t *testing.T) {
	rows := tableRows(section(t, readme(t), "Results"))
	if len(rows) < 5 {
		t.Fatalf("the results table has %d rows, want one per table of the paper (at least 5)", len(rows))
	}
	for _, row := range rows {
		if len(row) != 5 {
			t.Fatalf("row %q has %d cells, want 5 (paper, what, ours, paper's, details)", row[0], len(row))
		}
		m := link.FindStringSubmatch(row[4])
		if m == nil {
			t.Errorf("row %q links no README", row[0])
			continue
		}
		target := filepath.Join(root, m[1])
		if st, err := os.Stat(target); err == nil && st.IsDir() {
			target = filepath.Join(target, "README.md")
		}
		b, err := os.ReadFile(target)
		if err != nil {
			t.Errorf("row %q: %v", row[0], err)
			continue
		}
		text := string(b)
		found := 0
		for _, cell := range row[2:4] {
			for _, x := range number.FindAllString(cell, -1) {
				found++
				// The paper writes .83 where the READMEs write 0.83.
				pat := regexp.QuoteMeta(x)
				if strings.HasPrefix(x, ".") {
					pat = "0?" + pat
				}
				if !regexp.MustCompile(`(^|[^\d.])` + pat + `($|[^\d])`).MatchString(text) {
					t.Errorf("row %q: %s is not in %s", row[0], x, m[1])
				}
			}
		}
		if found == 0 {
			t.Errorf("row %q has no number", row[0])
		}
	}
}
