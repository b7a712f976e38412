package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
)

func writeSummary(t *testing.T, path string, s summary) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReport checks the tables -report prints from summaries: seeds of one
// setting are pooled into mean ± sample sd, tuning runs get a row each,
// other JSON files are ignored, and a summary whose split and evaluation
// disagree is an error.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	v := 120.0
	se := 1.5
	for i, x := range []float64{100, 102, 104} { // mean 102, sd 2
		s := summary{Estimator: "gumbel-softmax", Seed: uint64(i + 1), Epochs: 100, EvalSplit: "test", TrainSecs: 1200,
			Test: &vae.Eval{Images: 10000, K: 100, NegELBO: x + 10, NegLogPx: x}}
		writeSummary(t, filepath.Join(dir, "full", "gs"+string(rune('1'+i)), "summary.json"), s)
	}
	// The same runs evaluated again with more samples: no training.
	for i := range 3 {
		s := summary{Estimator: "gumbel-softmax", Seed: uint64(i + 1), Epochs: 100, Steps: 50000, ResumedStep: 50000,
			EvalSplit: "test", Test: &vae.Eval{Images: 1000, K: 1000, NegELBO: 100, NegLogPx: 90}}
		writeSummary(t, filepath.Join(dir, "k1000", "gs"+string(rune('1'+i))+".json"), s)
	}
	cfg := vae.DefaultConfig()
	cfg.PriorTemp = 0.5
	writeSummary(t, filepath.Join(dir, "tune", "c.json"), summary{Estimator: "concrete", Config: cfg, Seed: 101, Epochs: 10,
		EvalSplit: "validation", ValNegELBO: []*float64{&v}, ValStdErr: []*float64{&se}, ValImages: 1000,
		ValEval: &vae.Eval{Images: 1000, K: 100, NegLogPx: 111.25, NegLogPxSE: 0.5}})
	// A float32 run is its own row, marked, after the float64 ones.
	f32 := vae.DefaultConfig()
	f32.Precision = nn.Float32
	writeSummary(t, filepath.Join(dir, "f32", "gs1.json"), summary{Estimator: "gumbel-softmax", Config: f32, Seed: 1, Epochs: 100,
		EvalSplit: "test", TrainSecs: 600, Test: &vae.Eval{Images: 10000, K: 100, NegELBO: 111, NegLogPx: 101}})
	// A float64 run evaluated with float32 products is its own row too.
	writeSummary(t, filepath.Join(dir, "f32eval", "gs1.json"), summary{Estimator: "gumbel-softmax", Seed: 1, Epochs: 100, Steps: 50000, ResumedStep: 50000,
		EvalSplit: "test", EvalPrecision: "float32", Test: &vae.Eval{Images: 10000, K: 100, NegELBO: 112, NegLogPx: 102.5}})
	// Runs with AIS get a table of their own, a row each, ordered by schedule.
	for _, steps := range []int{4000, 1000} {
		writeSummary(t, filepath.Join(dir, "ais", "gs"+strconv.Itoa(steps)+".json"), summary{Estimator: "gumbel-softmax", Seed: 1, Epochs: 100,
			EvalSplit: "test", Test: &vae.Eval{Images: 100, K: 100, NegELBO: 98, NegLogPx: 89},
			AIS:     &vae.AISEval{Images: 100, Steps: steps, Chains: 4, NegLogPx: 86.5 - float64(steps)/4000, NegLogPxSE: 2.5, LogWeightSD: 0.25},
			AISSecs: 90, BDMC: &vae.BDMCEval{Images: 20, Gap: 0.04, GapSE: 0.01}})
	}
	// A second seed at 1,000 steps: its row follows seed 1's, and the two
	// are pooled in a table of their own (4,000 steps has one seed: no row).
	writeSummary(t, filepath.Join(dir, "ais", "gs1000_seed2.json"), summary{Estimator: "gumbel-softmax", Seed: 2, Epochs: 100,
		EvalSplit: "test", Test: &vae.Eval{Images: 100, K: 100, NegELBO: 98, NegLogPx: 91},
		AIS: &vae.AISEval{Images: 100, Steps: 1000, Chains: 4, NegLogPx: 87.25, NegLogPxSE: 2.5, LogWeightSD: 0.5}, AISSecs: 60})
	// Runs with AIS on a sample (-ais-sample) get the settled table: a row
	// per seed and, for two or more seeds, their mean ± sd.
	for i, g := range []float64{2, 4} {
		writeSummary(t, filepath.Join(dir, "settled", "c"+strconv.Itoa(i+1)+".json"), summary{Estimator: "concrete", Config: cfg, Seed: uint64(i + 1), Epochs: 100,
			EvalSplit: "test", Test: &vae.Eval{Images: 10000, K: 100, NegELBO: 110, NegLogPx: 100 + float64(i)},
			AIS:     &vae.AISEval{Images: 200, Steps: 4000, Chains: 4, Subset: []int{3, 9}, NegLogPx: 94},
			AISSecs: 1200,
			Settled: &vae.Settled{Images: 10000, Sample: 200, K: 100, IW: 100 + float64(i), Gap: g, GapSE: 0.25, NegLogPx: 100 + float64(i) - g, NegLogPxSE: 0.25}})
	}
	if err := os.WriteFile(filepath.Join(dir, "val.json"), []byte(`{"0":{"neg_elbo":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report(dir, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Contains(got, "| 4000 × 4 | 85.50 | 3.50 |") {
		t.Error("a setting with one seed has a pooled row")
	}
	for _, want := range []string{
		"| gumbel-softmax | – | 1, 2, 3 | 100 | 112.00 ± 2.00 | 106.7 | 102.00 ± 2.00 (K = 100, 10000 images) | 20 min |",
		"| gumbel-softmax | – | 1, 2, 3 | 100 | 100.00 ± 0.00 | 106.7 | 90.00 ± 0.00 (K = 1000, 1000 images) | evaluation of trained runs |",
		"| concrete | 0.5 | 101 | 10 | 120.00 ± 1.50 (1000 images) | 111.25 ± 0.50 (K = 100, 1000 images) |",
		"| gumbel-softmax (float32) | – | 1 | 100 | 111.00 | 106.7 | 101.00 (K = 100, 10000 images) | 10 min |",
		"| gumbel-softmax, evaluated in float32 | – | 1 | 100 | 112.00 | 106.7 | 102.50 (K = 100, 10000 images) | evaluation of trained runs |",
		"| gumbel-softmax | – | 1 | 100 | 89.00 (K = 100) | 1000 × 4 | 86.25 ± 2.50 | 0.250 | 0.040 ± 0.010 (20) | 1.5 |\n" +
			"| gumbel-softmax | – | 2 | 100 | 91.00 (K = 100) | 1000 × 4 | 87.25 ± 2.50 | 0.500 | – | 1.0 |\n" +
			"| gumbel-softmax | – | 1 | 100 | 89.00 (K = 100) | 4000 × 4 | 85.50 ± 2.50 | 0.250 | 0.040 ± 0.010 (20) | 1.5 |",
		"| estimator | λ_p | seeds | images | IW −log p(x) | AIS steps × chains | AIS −log p(x) | IW − AIS |\n" +
			"|---|---|---|---|---|---|---|---|\n" +
			"| gumbel-softmax | – | 1, 2 | 100 | 90.00 ± 1.41 (K = 100) | 1000 × 4 | 86.75 ± 0.71 | 3.25 ± 0.71 |\n",
		"| concrete | 0.5 | 1 | 10000 | 100.00 (K = 100) | 4000 × 4 | 200 images | 2.00 ± 0.25 | 98.00 ± 0.25 | 111.5 | 20.0 |\n" +
			"| concrete | 0.5 | 2 | 10000 | 101.00 (K = 100) | 4000 × 4 | 200 images | 4.00 ± 0.25 | 97.00 ± 0.25 | 111.5 | 20.0 |\n" +
			"| **concrete, seeds 1, 2** | 0.5 | mean ± sd | 10000 | 100.50 ± 0.71 (K = 100) | 4000 × 4 | 200 images | 3.00 ± 1.41 | **97.50 ± 0.71** | 111.5 | |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks\n%s\ngot\n%s", want, got)
		}
	}

	writeSummary(t, filepath.Join(dir, "bad.json"), summary{Estimator: "concrete", EvalSplit: "test"})
	if err := report(dir, io.Discard); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("summary without its evaluation: err %v", err)
	}
	// A summary written before -eval-split existed counts as a test run.
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"estimator":"concrete","seed":7,"epochs":100,"test":{"Images":10,"K":5,"NegELBO":3,"NegLogPx":2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := report(dir, &out); err != nil || !strings.Contains(out.String(), "| concrete | τ | 7 | 100 | 3.00 | 111.5 | 2.00 (K = 5, 10 images) |") {
		t.Errorf("old summary: err %v, report\n%s", err, out.String())
	}
	writeSummary(t, filepath.Join(dir, "bad.json"), summary{Estimator: "concrete"})
	if err := report(dir, io.Discard); err == nil || !strings.Contains(err.Error(), "no evaluation") {
		t.Errorf("summary without any evaluation: err %v", err)
	}
	if err := report(t.TempDir(), io.Discard); err == nil {
		t.Error("empty folder: no error")
	}
}

// TestEvalSplitValidation trains briefly with -eval-split validation and
// checks that the summary holds a validation evaluation and no test one,
// and that the split flag is checked.
func TestEvalSplitValidation(t *testing.T) {
	if _, err := parseFlags([]string{"-mnist", "x", "-eval-split", "train"}, io.Discard); err == nil {
		t.Error("-eval-split train: no error")
	}
	longtest.Skip(t, "trains on MNIST for a few seconds")
	if _, err := os.Stat(mnistDir); err != nil {
		t.Skipf("MNIST not found at %s: %v", mnistDir, err)
	}
	out := t.TempDir()
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "1", "-eval-split", "validation"), io.Discard); err != nil {
		t.Fatal(err)
	}
	s := readSummary(t, out)
	if s.Test != nil || s.ValEval == nil || s.ValEval.Images != 20 || s.EvalSplit != "validation" {
		t.Fatalf("summary: split %q, test %+v, validation %+v", s.EvalSplit, s.Test, s.ValEval)
	}
	// The validation images are the ones the per-epoch −ELBO uses (the
	// first -val-n = 50 of them include these 20), not the test images:
	// the same training with the test split evaluates other images.
	other := t.TempDir()
	if err := runTraining(context.Background(), runFlags(t, other, "-epochs", "1"), io.Discard); err != nil {
		t.Fatal(err)
	}
	if ts := readSummary(t, other); ts.Test == nil || ts.Test.NegLogPx == s.ValEval.NegLogPx || ts.TrainLoss[0] != s.TrainLoss[0] {
		t.Errorf("test split %+v (loss %v), validation split %+v (loss %v)", ts.Test, ts.TrainLoss, s.ValEval, s.TrainLoss)
	}
}

// TestReportSettledDiff checks the paired Gumbel space − Concrete row of
// the settled table, including summaries whose Settled predates its
// Subset field (the report takes the sample from AIS.Subset).
func TestReportSettledDiff(t *testing.T) {
	dir := t.TempDir()
	cfg := vae.DefaultConfig()
	cfg.PriorTemp = 0.1
	for _, r := range []struct {
		est      string
		iw, nlpx float64
		sIW, sA  []float64
	}{
		{"concrete", 25, 23, []float64{10, 30}, []float64{9, 27}},
		{"gumbel-space", 26, 23.5, []float64{11, 31}, []float64{9, 28}},
	} {
		writeSummary(t, filepath.Join(dir, r.est+".json"), summary{Estimator: r.est, Config: cfg, Seed: 1, Epochs: 100, EvalSplit: "test",
			Test:    &vae.Eval{Images: 4, K: 100, NegLogPx: r.iw},
			AIS:     &vae.AISEval{Images: 2, Steps: 4000, Chains: 4, Subset: []int{0, 2}},
			Settled: &vae.Settled{Images: 4, Sample: 2, K: 100, IW: r.iw, NegLogPx: r.nlpx, SampleIW: r.sIW, SampleAIS: r.sA}})
	}
	var out bytes.Buffer
	if err := report(dir, &out); err != nil {
		t.Fatal(err)
	}
	want := "| seed | images | AIS steps × chains | AIS sample | settled −log p(x), Gumbel space − Concrete (paired) | paper (read as a −ELBO) |\n" +
		"|---|---|---|---|---|---|\n" +
		"| 1 | 4 | 4000 × 4 | 2 images | 0.50 ± 0.35 | 0.4 |\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks\n%s\ngot\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "**seeds") {
		t.Errorf("one seed has a pooled row:\n%s", out.String())
	}
}

// TestReportSettledPools checks that settled runs of one schedule pool over
// seeds even when their AIS samples differ in size (both estimate the mean
// over all images), in the settled table and in the paired difference.
func TestReportSettledPools(t *testing.T) {
	dir := t.TempDir()
	cfg := vae.DefaultConfig()
	cfg.PriorTemp = 0.1
	for _, r := range []struct {
		est     string
		seed    uint64
		iw      float64
		sub     []int
		sIW, sA []float64
	}{
		{"concrete", 1, 25, []int{0, 2}, []float64{10, 30}, []float64{9, 27}},
		{"gumbel-space", 1, 26, []int{0, 2}, []float64{11, 31}, []float64{9, 28}},
		{"concrete", 2, 24, []int{0, 1, 2}, []float64{10, 20, 30}, []float64{9, 19, 29}},
		{"gumbel-space", 2, 24, []int{0, 1, 2}, []float64{10, 20, 30}, []float64{9, 19, 29}},
	} {
		st := &vae.Settled{Images: 4, Sample: len(r.sub), K: 100, IW: r.iw, Subset: r.sub, SampleIW: r.sIW, SampleAIS: r.sA}
		for j := range r.sIW {
			st.Gap += (r.sIW[j] - r.sA[j]) / float64(len(r.sIW))
		}
		st.NegLogPx = r.iw - st.Gap
		writeSummary(t, filepath.Join(dir, fmt.Sprintf("%s_seed%d.json", r.est, r.seed)), summary{Estimator: r.est, Config: cfg, Seed: r.seed, Epochs: 100, EvalSplit: "test",
			Test:    &vae.Eval{Images: 4, K: 100, NegLogPx: r.iw},
			AIS:     &vae.AISEval{Images: len(r.sub), Steps: 4000, Chains: 4, Subset: r.sub},
			Settled: st})
	}
	var out bytes.Buffer
	if err := report(dir, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// Concrete: settled 23 (seed 1) and 23 (seed 2).
		"| **concrete, seeds 1, 2** | 0.1 | mean ± sd | 4 | 24.50 ± 0.71 (K = 100) | 4000 × 4 | 2, 3 images | 1.50 ± 0.71 | **23.00 ± 0.00** | 111.5 | |\n",
		// Paired differences 0.5 (seed 1) and 0 (seed 2).
		"| 1 | 4 | 4000 × 4 | 2 images | 0.50 ± 0.35 | 0.4 |\n",
		"| 2 | 4 | 4000 × 4 | 3 images | 0.00 ± 0.00 | 0.4 |\n",
		"| **seeds 1, 2**, mean ± sd | 4 | 4000 × 4 | 2, 3 images | **0.25 ± 0.35** | 0.4 |\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks\n%s\ngot\n%s", want, out.String())
		}
	}
}
