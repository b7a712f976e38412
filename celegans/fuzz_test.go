package celegans

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/permlab/permlab/compare"
)

// committedTables is the results folder of the committed tables run.
var committedTables = filepath.Join("results", "tables")

// firstLines returns the first n lines of b.
func firstLines(b []byte, n int) []byte {
	end := 0
	for range n {
		i := bytes.IndexByte(b[end:], '\n')
		if i < 0 {
			return b
		}
		end += i + 1
	}
	return b[:end]
}

// firstResults returns the first n lines of the first committed results
// file, or nil.
func firstResults(n int) []byte {
	names, _ := filepath.Glob(filepath.Join(committedTables, ResultsFiles))
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	b, err := os.ReadFile(names[0])
	if err != nil {
		return nil
	}
	return firstLines(b, n)
}

// FuzzLoadConnectome checks that no pair of tables makes LoadConnectome
// panic, that every error it returns names the table (connections or
// types) it is about, and that what it accepts is a connectome in
// canonical order: distinct names, positions in [0, 1] sorted (ties by name), and a
// symmetric adjacency without self loops and with at least one edge.
func FuzzLoadConnectome(f *testing.F) {
	f.Add([]byte(smallConnect), []byte(smallTypes))
	// The WormAtlas tables, whole and cut short after a few rows.
	connect, errC := os.ReadFile(filepath.Join(realDataDir, "NeuronConnect.csv"))
	types, errT := os.ReadFile(filepath.Join(realDataDir, "NeuronType.csv"))
	if errC == nil && errT == nil {
		f.Add(connect, types)
		f.Add(firstLines(connect, 40), types)
		f.Add(firstLines(connect, 40), firstLines(types, 40))
		f.Add(connect[:len(connect)/2], types)
		// Damaged in the ways the loader must refuse: only the header, a
		// row of an unknown neuron, a row with no synapses.
		f.Add(firstLines(connect, 1), types)
		row := []byte("ADAR,ADAL,EJ,1,") // line 2
		if !bytes.Contains(connect, row) {
			f.Fatalf("NeuronConnect.csv lacks the row %q", row)
		}
		f.Add(bytes.Replace(connect, row, []byte("ADAR,ADAX,EJ,1,"), 1), types)
		f.Add(bytes.Replace(connect, row, []byte("ADAR,ADAL,EJ,0,"), 1), types)
	}
	// Damaged tables.
	header := "Neuron 1,Neuron 2,Type,Nbr\n"
	typesOK := "Neuron,Soma Position\nAA,0.5\nBB,0.1\n"
	for _, tc := range [][2]string{
		{smallConnect[:len(smallConnect)-7], smallTypes},                   // row cut off
		{smallConnect, smallTypes[:len(smallTypes)/2]},                     // types cut off
		{"Neuron A,Neuron 2,Type,Nbr\nAA,BB,S,1\n", typesOK},               // wrong header
		{header + "AA,BB,S,1\n", "Neuron,Position\nAA,0.5\n"},              // wrong header
		{header + "AA,BB,S,1\n", "Neuron,Soma Position\nAA,NaN\nBB,0.1\n"}, // NaN position
		{header + "AA,BB,S,1\n", "Neuron,Soma Position\nAA,Inf\nBB,-0\n"},
		{header + "AA,BB,S,99999999999999999999999\n", typesOK},            // huge count
		{header + "AA,BB,S,-1\n", typesOK},                                 // negative count
		{header + "AA,BB,XX,1\n", typesOK},                                 // unknown type
		{header + "AA,BB,S,1\n", "Neuron,Soma Position\nAA,0.5\nAA,0.1\n"}, // duplicate neuron
		{header + "AA,ZZ,S,1\n", typesOK},                                  // unknown neuron
		{header + "AA,BB,S,1\nzz,AA,EJ,2\n", typesOK},                      // unknown neuron, second row
		{header + "AA,BB,S,1\nAA,NP,S,1\n", typesOK + "NP,\n"},             // neuron without a position
		{header + "AA,BB,S,0\n", typesOK},                                  // zero count
		{header + "AA,BB,S,1\nBB,AA,R,0\n", typesOK},                       // zero count, second row
		{header + "AA,BB,S,1.5\n", typesOK},                                // count not an integer
		{header + "AA,BB,S,\n", typesOK},                                   // count missing
		{header + "VC06,NMJ,NMJ,1\nAA,BB,S,1\n", typesOK},                  // NMJ row of an unlisted neuron
		{header + "AA,NMJ,NMJ,2\n", typesOK},                               // only NMJ rows
		{"Neuron 1,Neuron 2,Type,Nbr,\r\n", typesOK},                       // header only, WormAtlas layout
		{header + "\n\n", typesOK},                                         // header and blank lines
		{header + "AA,AA,S,1\n", typesOK},                                  // only a self loop
		{header, typesOK},                                                  // no rows
		{header + "\"AA,BB,S,1\n", typesOK},                                // open quote
		{"\uFEFF" + header + "AA,BB,EJ,1\r\n", "\uFEFFNeuron,Soma Position\r\nAA,1\r\nBB,0\r\n"},
		{"", ""},
		{"\x00\xff,\n", "\x00\n"},
	} {
		f.Add([]byte(tc[0]), []byte(tc[1]))
	}
	f.Fuzz(func(t *testing.T, connect, types []byte) {
		c, err := LoadConnectome(bytes.NewReader(connect), bytes.NewReader(types))
		if err != nil {
			// Every error names the table it is about.
			msg := err.Error()
			if !strings.HasPrefix(msg, "celegans: LoadConnectome: connections") &&
				!strings.HasPrefix(msg, "celegans: LoadConnectome: types") {
				t.Fatalf("error names neither table: %v", err)
			}
			if c != nil {
				t.Fatalf("a connectome with the error %v", err)
			}
			return
		}
		n := c.N()
		if n < 2 || len(c.Positions) != n || c.Edges() < 1 {
			t.Fatalf("%d neurons, %d positions, %d edges", n, len(c.Positions), c.Edges())
		}
		for i, name := range c.Names {
			if j, err := c.NameIndex(name); err != nil || j != i {
				t.Fatalf("neuron %d %q: index %d, %v", i, name, j, err)
			}
			if p := c.Positions[i]; !(p >= 0 && p <= 1) {
				t.Fatalf("neuron %q at %v", name, p)
			}
			if i > 0 {
				pp, p := c.Positions[i-1], c.Positions[i]
				if pp > p || (pp == p && c.Names[i-1] >= name) {
					t.Fatalf("neurons %q at %v and %q at %v out of order", c.Names[i-1], pp, name, p)
				}
			}
		}
		degrees := 0
		for i := range n {
			nb := c.Neighbors(i)
			if !slices.IsSorted(nb) || c.Connected(i, i) {
				t.Fatalf("neighbours of %d: %v", i, nb)
			}
			for _, j := range nb {
				if !c.Connected(j, i) {
					t.Fatalf("%d-%d connected one way only", i, j)
				}
			}
			degrees += len(nb)
		}
		if degrees != 2*c.Edges() {
			t.Fatalf("degrees sum to %d for %d edges", degrees, c.Edges())
		}
	})
}

// FuzzReadResults checks that no results file makes ReadResults panic, and
// that every record it returns is of the run its compare record names.
func FuzzReadResults(f *testing.F) {
	if real := firstResults(3); real != nil {
		f.Add(real)
		f.Add(real[:len(real)*2/3]) // torn last line
	}
	line := `{"problem":"t3/10-hard","seed":5,"method":"mcmc","metrics":{"accuracy":0.13},"iterations":2680,"config":"c",` +
		`"extra":{"cell":"t3/10-hard","table":3,"seed":5,"method":"mcmc","worms":4,"known":25,"nu":0.1,"accuracy":0.13,"trace":[{"t":0.1,"acc":0.1}]}}` + "\n"
	f.Add([]byte(line))
	f.Add([]byte(strings.Replace(line, `"extra":{`, `"extra":{"trace":7,`, 1)))    // extra of the wrong shape
	f.Add([]byte(strings.Replace(line, `"extra":{`, `"extra":[{`, 1)))             // extra not an object
	f.Add([]byte(strings.Replace(line, `"accuracy":0.13}`, `"accuracy":NaN}`, 1))) // NaN is not JSON
	f.Add([]byte(strings.Replace(line, `"seed":5`, `"seed":1e99`, 1)))             // huge seed
	f.Add([]byte("{bad\n" + line))
	// Found by the fuzzer: a stored record that names no method (and so
	// was filed under another run than its compare record's).
	f.Add([]byte(`{"problem":"d","method":"c","":{"":0.3},"":0,"":"","extra":{"cell":"d","":3,"":5,"":"","":4,"":5,"":0.1,"":2,"":[{"":0.1,"":0.1}]}}`))
	f.Add([]byte{0, 0xff, '\n', '{'})
	dir := f.TempDir()
	path := filepath.Join(dir, "results-fuzz.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadResults(dir)
		if err != nil {
			return
		}
		crs, err := compare.ReadRecords(dir)
		if err != nil || len(crs) != len(recs) {
			t.Fatalf("%d records, compare reads %d (%v)", len(recs), len(crs), err)
		}
		for i, r := range recs {
			if r.Cell != crs[i].Problem || r.Seed != crs[i].Seed || string(r.Method) != crs[i].Method {
				t.Fatalf("record of %s seed %d %s, its compare record is of %s seed %d %s",
					r.Cell, r.Seed, r.Method, crs[i].Problem, crs[i].Seed, crs[i].Method)
			}
		}
	})
}

// FuzzReport checks that no summary.json and results file make Report or
// the Markdown of its summary panic, hang or allocate for a grid the files
// do not hold.
func FuzzReport(f *testing.F) {
	summary, err := os.ReadFile(filepath.Join(committedTables, SummaryFile))
	if err != nil {
		f.Fatal(err)
	}
	results := firstResults(3)
	f.Add(summary, results)
	f.Add(summary, []byte{})
	f.Add(summary[:len(summary)/2], results) // truncated
	for _, edit := range [][2]string{
		{`"seeds": 5`, `"seeds": 5000000000000000000`}, // huge grid
		{`"seeds": 5`, `"seeds": 200000`},
		{`"seeds": 5`, `"seeds": -1`},
		{`"seed_start": 1`, `"seed_start": 9223372036854775807`}, // seeds past MaxInt
		{`"methods": [`, `"methods": ["mcmc", `},                 // a repeated method
		{`"configs": {`, `"configs": {"x": "y", `},
		{`"T": 1000`, `"T": NaN`},
	} {
		if !bytes.Contains(summary, []byte(edit[0])) {
			f.Fatalf("summary.json lacks %q", edit[0])
		}
		f.Add(bytes.Replace(summary, []byte(edit[0]), []byte(edit[1]), 1), results)
	}
	f.Add([]byte(`{"cells":[{"key":"k","configs":{"m":"c"}}],"methods":["m"],"seeds":1}`),
		[]byte(`{"problem":"k","seed":0,"method":"m","config":"c","extra":{"cell":"k","seed":0,"method":"m","accuracy":0.5}}`+"\n"))
	f.Add([]byte(`{"cells":[{"key":"k"}],"methods":["m"],"seeds":1}`), []byte{})
	f.Add([]byte("garbage"), []byte("garbage"))
	f.Fuzz(func(t *testing.T, summary, results []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, SummaryFile), summary, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "results-fuzz.jsonl"), results, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Report(dir)
		if err != nil {
			return
		}
		if s.Missing < 0 || len(s.Cells) == 0 {
			t.Fatalf("%d missing runs, %d cells", s.Missing, len(s.Cells))
		}
		_ = s.Markdown()
	})
}
