// Package mdtable reads the tables of a Markdown file, so that tests can
// check the numbers a README quotes against the committed results files
// they come from.
package mdtable

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Table is one pipe table: its header cells and its body rows, with the
// line number (from 1) of each row in the file.
type Table struct {
	Header []string
	Rows   [][]string
	Lines  []int
}

// Column returns the index of the header cell equal to name, or -1.
func (t *Table) Column(name string) int {
	for i, h := range t.Header {
		if h == name {
			return i
		}
	}
	return -1
}

// Read returns the pipe tables of the Markdown file at path: runs of
// lines that start with "|", whose second line is the delimiter row.
// Cells are trimmed of spaces and of the ** of bold text.
func Read(path string) ([]Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		tables []Table
		cur    *Table
		header []string // the first line of the current run
		lineNo int
		inRun  int // lines of the current run of "|" lines
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			cur, inRun = nil, 0
			continue
		}
		inRun++
		cells := split(line)
		switch {
		case inRun == 1:
			header = cells
		case inRun == 2:
			if isDelimiter(cells) {
				tables = append(tables, Table{Header: header})
				cur = &tables[len(tables)-1]
			}
		case cur != nil:
			cur.Rows = append(cur.Rows, cells)
			cur.Lines = append(cur.Lines, lineNo)
		}
	}
	return tables, sc.Err()
}

func split(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		c = strings.TrimSpace(c)
		if strings.HasPrefix(c, "**") && strings.HasSuffix(c, "**") && len(c) >= 4 {
			c = c[2 : len(c)-2]
		}
		cells[i] = c
	}
	return cells
}

func isDelimiter(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

var number = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?`)

// Number parses the number a cell starts with ("0.301", "0.301 (0.39)",
// "1.000") and returns it with half a unit of its last printed digit: the
// most a correctly rounded value can differ from what it stands for.
func Number(cell string) (v, halfUlp float64, err error) {
	s := number.FindString(cell)
	if s == "" {
		return 0, 0, fmt.Errorf("mdtable: cell %q does not start with a number", cell)
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, 0, err
	}
	decimals := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		decimals = len(s) - i - 1
	}
	return v, 0.5 * math.Pow(10, -float64(decimals)), nil
}

// Matches reports whether the cell's number is value rounded to the
// digits printed (with a margin of 1e-9 for values exactly half-way).
func Matches(cell string, value float64) (bool, error) {
	v, half, err := Number(cell)
	if err != nil {
		return false, err
	}
	return math.Abs(v-value) <= half+1e-9, nil
}

// FileRow is a body row of a table whose "file" column names a results
// file.
type FileRow struct {
	Table *Table
	Row   int    // index in Table.Rows
	Line  int    // line number in the Markdown file
	Path  string // the file cell, without backquotes
}

// FileRows returns the rows of the tables of the Markdown file at path
// whose "file" cell names a file ending in suffix.
func FileRows(path, suffix string) ([]FileRow, error) {
	tables, err := Read(path)
	if err != nil {
		return nil, err
	}
	var out []FileRow
	for i := range tables {
		t := &tables[i]
		fc := t.Column("file")
		if fc < 0 {
			continue
		}
		for r, row := range t.Rows {
			if fc >= len(row) {
				continue
			}
			if p := strings.Trim(row[fc], "`"); strings.HasSuffix(p, suffix) {
				out = append(out, FileRow{Table: t, Row: r, Line: t.Lines[r], Path: p})
			}
		}
	}
	return out, nil
}

// Compare checks every non-empty cell of the row whose column header is a
// key of values against that value (Matches). It returns a message for
// each cell that differs and the number of cells checked. A value of NaN
// stands for one the file lacks: a cell in its column is reported.
func (f FileRow) Compare(values map[string]float64) (diffs []string, checked int, err error) {
	row := f.Table.Rows[f.Row]
	for c, name := range f.Table.Header {
		v, ok := values[name]
		if !ok || c >= len(row) || row[c] == "" {
			continue
		}
		if math.IsNaN(v) {
			diffs = append(diffs, fmt.Sprintf("line %d: %s is %s, %s has no value for it", f.Line, name, row[c], f.Path))
			continue
		}
		match, err := Matches(row[c], v)
		if err != nil {
			return nil, checked, fmt.Errorf("line %d: %w", f.Line, err)
		}
		if !match {
			diffs = append(diffs, fmt.Sprintf("line %d: %s is %s, %s has %v", f.Line, name, row[c], f.Path, v))
		}
		checked++
	}
	return diffs, checked, nil
}

// CheckFiles compares every row of the tables of the Markdown file at path
// that names a results file ending in suffix (relative to the Markdown
// file's folder) with that file: values reads a file and returns its
// value for each column header it knows, and Compare checks the row's
// cells against them. It returns the number of rows checked and a message
// for each cell that differs and each row with no column checked.
func CheckFiles(path, suffix string, values func(data []byte) (map[string]float64, error)) (rows int, diffs []string, err error) {
	return CheckRows(path, suffix, func(_ FileRow, data []byte) (map[string]float64, error) { return values(data) })
}

// CheckRows is CheckFiles for files whose values depend on the row as well
// (a file of several records, of which a column of the row picks one):
// values gets the row with its file's contents.
func CheckRows(path, suffix string, values func(fr FileRow, data []byte) (map[string]float64, error)) (rows int, diffs []string, err error) {
	frs, err := FileRows(path, suffix)
	if err != nil {
		return 0, nil, err
	}
	for _, fr := range frs {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(fr.Path)))
		if err != nil {
			return rows, diffs, fmt.Errorf("line %d: %w", fr.Line, err)
		}
		vals, err := values(fr, data)
		if err != nil {
			return rows, diffs, fmt.Errorf("line %d: %s: %w", fr.Line, fr.Path, err)
		}
		d, checked, err := fr.Compare(vals)
		if err != nil {
			return rows, diffs, err
		}
		diffs = append(diffs, d...)
		if checked == 0 {
			diffs = append(diffs, fmt.Sprintf("line %d: no column checked against %s", fr.Line, fr.Path))
		}
		rows++
	}
	return rows, diffs, nil
}
