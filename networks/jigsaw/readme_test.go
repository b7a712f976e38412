package jigsaw_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/permlab/permlab/internal/jsonl"
	"github.com/permlab/permlab/internal/mdtable"
	"github.com/permlab/permlab/networks/jigsaw/decode"
)

// The Markdown files whose tables TestReadmeNumbers checks, each with the
// least number of rows naming a results file it must hold: the README keeps
// the results that stand, the results log every run behind them. Paths in a
// table are relative to the folder of its file (the log's to results/).
var checkedDocs = []struct {
	path    string
	minRows int
}{
	{"README.md", 10},
	{"results/NOTES.md", 150},
}

// TestReadmeNumbers checks every row of the tables of README.md and of the
// results log results/NOTES.md that names a results file (a "file" column
// holding a path relative to the Markdown file) against that file: each
// metric column must be the file's value rounded to the digits printed. A
// row naming a `….json` file is checked against it; a row naming a
// `….jsonl` file (a Table 2 run, one record per size) against the record
// of its "size" column ("6x6"). The columns "solved", "search misses" and
// "score misses" are shares of the puzzles of the file's search gap
// (decode.SearchGap), "mean score" its mean decoded score, "start
// temperature", "end temperature" and "proposals" the annealing of the
// file's decoder, "critic weight" its weight of the critic, and "Kendall
// tau, best possible" the oracle's Kendall tau on the same puzzles.
func TestReadmeNumbers(t *testing.T) {
	total := 0
	for _, doc := range checkedDocs {
		rows, diffs, err := mdtable.CheckFiles(doc.path, ".json", resultValues)
		if err != nil {
			t.Fatalf("%s: %v", doc.path, err)
		}
		jrows, jdiffs, err := checkTable2Rows(doc.path)
		if err != nil {
			t.Fatalf("%s: %v", doc.path, err)
		}
		for _, d := range append(diffs, jdiffs...) {
			t.Error(doc.path + " " + d)
		}
		if rows+jrows < doc.minRows {
			t.Errorf("%s: checked %d rows naming a results file, want at least %d", doc.path, rows+jrows, doc.minRows)
		}
		total += rows + jrows
	}
	t.Logf("checked %d rows naming a results file", total)
}

// resultValues returns the values of a results record (a JSON file, or one
// line of a table2*.jsonl file) for the column headers TestReadmeNumbers
// knows; NaN stands for one the record lacks.
func resultValues(b []byte) (map[string]float64, error) {
	metric := map[string]string{
		"Kendall tau":                     "kendall_tau",
		"prop. wrong":                     "prop_wrong",
		"prop. any wrong":                 "prop_any_wrong",
		"l1":                              "l1",
		"l2 (RMSE)":                       "l2_rmse",
		"prop. wrong up to identical":     "prop_wrong_identical",
		"prop. any wrong up to identical": "prop_any_wrong_identical",
	}
	var res struct {
		Metrics map[string]float64 `json:"metrics"`
		Oracle  map[string]float64 `json:"oracle"`
		Search  *decode.Gap        `json:"search"`
		Decoder *decode.Decoder    `json:"decoder"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for name, key := range metric {
		if v, ok := res.Metrics[key]; ok {
			values[name] = v
		}
	}
	values["Kendall tau, best possible"] = math.NaN()
	if v, ok := res.Oracle["kendall_tau"]; ok {
		values["Kendall tau, best possible"] = v
	}
	values["solved"], values["search misses"], values["score misses"] = math.NaN(), math.NaN(), math.NaN()
	values["mean score"] = math.NaN()
	values["start temperature"], values["end temperature"], values["proposals"] = math.NaN(), math.NaN(), math.NaN()
	if g := res.Search; g != nil && g.Puzzles > 0 {
		n := float64(g.Puzzles)
		values["solved"] = float64(g.Solved) / n
		values["search misses"] = float64(g.SearchMisses) / n
		values["score misses"] = float64(g.ScoreMisses) / n
		if g.MeanScore != 0 {
			values["mean score"] = g.MeanScore
		}
	}
	values["critic weight"] = math.NaN()
	if d := res.Decoder; d != nil {
		values["start temperature"], values["end temperature"] = d.Temps()
		values["proposals"] = float64(d.Anneal)
		values["critic weight"] = d.CriticWeight // 0: no critic
	}
	return values, nil
}

// checkTable2Rows checks the rows of the tables of the Markdown file at path
// whose "file" column names a `….jsonl` file (a Table 2 run), each against
// the record of the puzzle size in its "size" column (the last record of
// that size, as -table2 reads them). It returns the number of rows checked and a
// message for each cell that differs; a row it cannot check is an error.
func checkTable2Rows(path string) (rows int, diffs []string, err error) {
	return mdtable.CheckRows(path, ".jsonl", func(fr mdtable.FileRow, data []byte) (map[string]float64, error) {
		row := fr.Table.Rows[fr.Row]
		sc := fr.Table.Column("size")
		if sc < 0 || sc >= len(row) {
			return nil, errors.New("no size column")
		}
		var p, q int
		if n, _ := fmt.Sscanf(row[sc], "%dx%d", &p, &q); n != 2 || p != q {
			return nil, fmt.Errorf("size %q is not of the form 3x3", row[sc])
		}
		var rec json.RawMessage
		for line := range bytes.SplitSeq(bytes.TrimSpace(data), []byte("\n")) {
			var head struct {
				P int `json:"p"`
			}
			if err := json.Unmarshal(line, &head); err != nil {
				return nil, err
			}
			if head.P == p {
				rec = line
			}
		}
		if rec == nil {
			return nil, fmt.Errorf("no record for %dx%d", p, p)
		}
		return resultValues(rec)
	})
}

// TestDecodedOnTwoCores checks the README's claim that decoding the 4 × 4
// test puzzles on two cores gave the metrics of the 16-core run to the
// last bit.
func TestDecodedOnTwoCores(t *testing.T) {
	read := func(path string) map[int]map[string]any {
		recs, err := jsonl.Read[map[string]any](path)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]map[string]any{}
		for _, r := range recs {
			out[int(r["p"].(float64))] = r
		}
		return out
	}
	many, two := read("results/table2_decoded.jsonl"), read("results/table2_decoded_p4_2cores.jsonl")
	if g := two[4]["gomaxprocs"]; g != 2.0 {
		t.Fatalf("the two-core record ran with GOMAXPROCS %v", g)
	}
	if g := many[4]["gomaxprocs"]; g == 2.0 {
		t.Fatalf("the table's 4 x 4 record ran with GOMAXPROCS 2 too")
	}
	if !reflect.DeepEqual(many[4]["metrics"], two[4]["metrics"]) {
		t.Errorf("4 x 4 metrics differ:\n%v\n%v", many[4]["metrics"], two[4]["metrics"])
	}
}
