package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/nn/train"
	"github.com/permlab/permlab/vi"
)

func TestFlags(t *testing.T) {
	var buf strings.Builder
	if _, err := parseFlags([]string{"-h"}, &buf); !errors.Is(err, flag.ErrHelp) || !strings.Contains(buf.String(), "-estimator") {
		t.Errorf("-h: err %v, usage %q", err, buf.String())
	}
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "-mnist") || !strings.Contains(err.Error(), "IDX") {
		t.Errorf("no -mnist: err %v, want one saying how to get MNIST", err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := parseFlags([]string{"-mnist", missing}, io.Discard); err == nil || !strings.Contains(err.Error(), "-mnist "+missing) || !strings.Contains(err.Error(), "IDX") {
		t.Errorf("missing MNIST folder: err %v, want one saying how to get MNIST", err)
	}
	o, err := parseFlags([]string{"-mnist", t.TempDir(), "-out", filepath.Join(t.TempDir(), "new")}, io.Discard)
	if err != nil || o.epochs != 5 || o.estimator != "gumbel-softmax" {
		t.Errorf("defaults: %+v, err %v", o, err)
	}
}

// Bad command lines exit with status 2 and a message naming the flag,
// before any data is read (the MNIST folder here is empty, so reading it
// would fail with another message) and without writing anything.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-estimator", "rebar"}, `-estimator: unknown estimator "rebar"`},
		{[]string{"-epochs", "0"}, "-epochs must be >= 1, got 0"},
		{[]string{"-batch", "0"}, "-batch must be >= 1, got 0"},
		{[]string{"-lr", "0"}, "-lr must be finite and > 0"},
		{[]string{"-prior-temp", "-1"}, "-prior-temp must be finite and >= 0"},
		{[]string{"-tau0", "0"}, "-tau0 must be finite and > 0"},
		{[]string{"-tau-min", "0"}, "-tau-min must be finite and > 0"},
		{[]string{"-tau-min", "2"}, "-tau-min 2 must be at most -tau0 1"},
		{[]string{"-anneal-rate", "-1e-4"}, "-anneal-rate must be finite and >= 0"},
		{[]string{"-anneal-every", "0"}, "-anneal-every must be >= 1"},
		{[]string{"-iw-k", "0"}, "-iw-k must be >= 1"},
		{[]string{"-test-n", "-1"}, "-test-n must be >= 0"},
		{[]string{"-test-n", "1"}, "-test-n 1: the standard errors"},
		{[]string{"-val-n", "0"}, "-val-n must be >= 1"},
		{[]string{"-train-n", "0"}, "-train-n must be in [1, 50000]"},
		{[]string{"-train-n", "60000"}, "-train-n must be in [1, 50000] (the training images), got 60000"},
		{[]string{"-eval-split", "train"}, `-eval-split "train": want test, validation`},
		{[]string{"-binarize", "once"}, `-binarize "once": want dynamic, fixed`},
		{[]string{"-binarize-seed", "3"}, "-binarize-seed needs -binarize fixed"},
		{[]string{"-precision", "float16"}, "-precision: "},
		{[]string{"-eval-precision", "half"}, "-eval-precision: "},
		{[]string{"-ais-steps", "-1"}, "-ais-steps must be >= 0"},
		{[]string{"-ais-chains", "1"}, "-ais-chains must be >= 2"},
		{[]string{"-bdmc", "5"}, "-bdmc needs -ais-steps"},
		{[]string{"-ais-steps", "9", "-bdmc", "1"}, "-bdmc must be 0 or >= 2"},
		{[]string{"-ais-steps", "9", "-bdmc", "-1"}, "-bdmc must be 0 or >= 2"},
		{[]string{"-ais-sample", "5"}, "-ais-sample needs -ais-steps"},
		{[]string{"-ais-steps", "9", "-ais-sample", "1"}, "-ais-sample must be 0 or >= 2"},
		{[]string{"-ais-steps", "9", "-ais-sample", "-2"}, "-ais-sample must be 0 or >= 2"},
		{[]string{"-against", dir}, "-against needs -report"},
		{[]string{"-mnist", file}, "-mnist " + file + ": not a directory"},
		{[]string{"-out", file}, "-out " + file + ": not a directory"},
		{[]string{"-report", file}, "-report " + file + ": not a directory"},
		{[]string{"-report", dir, "-against", filepath.Join(dir, "missing")}, "-against " + filepath.Join(dir, "missing")},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-epochs", "2", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			mnist := filepath.Join(t.TempDir(), "mnist")
			if err := os.Mkdir(mnist, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"-mnist", mnist, "-out", out}, tc.args...)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
				t.Errorf("status %d, want 2", code)
			}
			if msg := stderr.String(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "vae: vae:") {
				t.Errorf("message %q, want one with %q", msg, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the output folder was made: %v", err)
			}
		})
	}
}

// TestPrepareCheckpoint checks the guard of resumption: a fresh folder
// gets run.json; a checkpoint with the same settings resumes; one with
// other settings, or without run.json (an older examples/vae's), is an
// error that says what to do.
func TestPrepareCheckpoint(t *testing.T) {
	dir := t.TempDir()
	info := runInfo{CodePath: codePath, Estimator: "gumbel-space", Anneal: vae.DefaultAnneal(), LR: 1e-3,
		BatchSize: 100, Seed: 1, TrainN: 500, ValN: 50}
	if resume, err := prepareCheckpoint(dir, info); err != nil || resume {
		t.Fatalf("fresh folder: resume %v, err %v", resume, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "checkpoint"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if resume, err := prepareCheckpoint(dir, info); err != nil || !resume {
		t.Fatalf("same settings: resume %v, err %v", resume, err)
	}
	other := info
	other.Estimator = "concrete"
	if _, err := prepareCheckpoint(dir, other); err == nil || !strings.Contains(err.Error(), `estimator "gumbel-space", this one has "concrete"`) {
		t.Errorf("other estimator: err %v", err)
	}
	other = info
	other.Anneal.Rate = 2e-4
	if _, err := prepareCheckpoint(dir, other); err == nil || !strings.Contains(err.Error(), "anneal") {
		t.Errorf("other annealing: err %v", err)
	}
	// A float64 checkpoint (no precision in run.json) does not resume in
	// float32, and a float32 one not in float64.
	other = info
	other.Precision = "float32"
	if _, err := prepareCheckpoint(dir, other); err == nil || !strings.Contains(err.Error(), `precision none, this one has "float32"`) {
		t.Errorf("float32 flags on a float64 checkpoint: err %v", err)
	}
	f32dir := t.TempDir()
	if _, err := prepareCheckpoint(f32dir, other); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f32dir, "checkpoint"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if resume, err := prepareCheckpoint(f32dir, other); err != nil || !resume {
		t.Fatalf("float32, same settings: resume %v, err %v", resume, err)
	}
	if _, err := prepareCheckpoint(f32dir, info); err == nil || !strings.Contains(err.Error(), `precision "float32", this one has none`) {
		t.Errorf("float64 flags on a float32 checkpoint: err %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "run.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareCheckpoint(dir, info); err == nil || !strings.Contains(err.Error(), "older examples/vae") || !strings.Contains(err.Error(), "delete") {
		t.Errorf("checkpoint without run.json: err %v", err)
	}
}

const mnistDir = "../../../shared/data/mnist" // ../shared beside the checkout

// The end-to-end tests that train on MNIST (about a minute and a half on 2
// cores) are long tests (package longtest): go test -tags long
// ./examples/vae. They are opt-in so that go test ./... stays fast; CI runs
// them in a stage of their own.

// runFlags returns the options of a quick run on 300 MNIST images.
func runFlags(t *testing.T, out string, extra ...string) *options {
	t.Helper()
	args := append([]string{"-mnist", mnistDir, "-estimator", "gumbel-space", "-train-n", "300", "-val-n", "50",
		"-test-n", "20", "-iw-k", "5", "-out", out}, extra...)
	o, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func readSummary(t *testing.T, dir string) summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunMNIST trains for one epoch on 300 images and checks the outputs,
// resumes to a second epoch and checks that the result equals an
// uninterrupted two-epoch run bit for bit, and checks that a run with
// another estimator refuses the checkpoint.
func TestRunMNIST(t *testing.T) {
	longtest.Skip(t, "trains on MNIST for several seconds")
	if _, err := os.Stat(mnistDir); err != nil {
		t.Skipf("MNIST not found at %s: %v", mnistDir, err)
	}
	out := t.TempDir()
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "1", "-ais-steps", "3", "-ais-chains", "2", "-bdmc", "2"), io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.json", "model.plnn", "curves.png", "recon.png", "samples.png", "checkpoint", "run.json", "val.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	s := readSummary(t, out)
	if s.Test == nil || s.Test.Images != 20 || s.Test.K != 5 || !(s.Test.NegLogPx > 0) || s.Steps != 3 ||
		len(s.ValNegELBO) != 1 || s.ValNegELBO[0] == nil || !(*s.ValNegELBO[0] > 0) || s.CodePath != codePath {
		t.Errorf("summary: %+v", s)
	}
	if a, b := s.AIS, s.BDMC; a == nil || a.Images != 20 || a.Steps != 3 || a.Chains != 2 || !(a.NegLogPx > 0) ||
		b == nil || b.Images != 2 || b.Steps != 3 || !(b.Forward > 0) {
		t.Errorf("AIS %+v, BDMC %+v; want 20 images, 2 simulated ones, 3 steps, 2 chains", a, b)
	}

	// Go on to two epochs, and compare with two epochs in one go.
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "2"), io.Discard); err != nil {
		t.Fatal(err)
	}
	whole := t.TempDir()
	if err := runTraining(context.Background(), runFlags(t, whole, "-epochs", "2"), io.Discard); err != nil {
		t.Fatal(err)
	}
	resumed, fresh := readSummary(t, out), readSummary(t, whole)
	if resumed.ResumedStep != 3 || resumed.Steps != 6 || fresh.ResumedStep != 0 {
		t.Errorf("resumed from step %d to %d; the fresh run from %d", resumed.ResumedStep, resumed.Steps, fresh.ResumedStep)
	}
	if !slices.Equal(resumed.TrainLoss, fresh.TrainLoss) || len(resumed.ValNegELBO) != 2 {
		t.Errorf("training −ELBO by epoch %v resumed, %v in one go", resumed.TrainLoss, fresh.TrainLoss)
	}
	for i := range resumed.ValNegELBO {
		if r, f := resumed.ValNegELBO[i], fresh.ValNegELBO[i]; r == nil || f == nil || *r != *f {
			t.Errorf("validation −ELBO of epoch %d: %v resumed, %v in one go", i+1, r, f)
		}
	}
	a, err := os.ReadFile(filepath.Join(out, "model.plnn"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(whole, "model.plnn"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the resumed run's parameters differ from the uninterrupted run's")
	}

	// AIS on a random sample of the 20 test images, settled with the IW
	// estimate of all 20 (the run resumes at its end and trains nothing).
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "2", "-ais-steps", "3", "-ais-chains", "2", "-ais-sample", "6"), io.Discard); err != nil {
		t.Fatal(err)
	}
	s = readSummary(t, out)
	if st, a := s.Settled, s.AIS; st == nil || a == nil || st.Images != 20 || st.Sample != 6 || a.Images != 6 ||
		len(a.Subset) != 6 || !slices.IsSorted(a.Subset) || st.IW != s.Test.NegLogPx ||
		math.Abs(st.NegLogPx-(st.IW-st.Gap)) > 1e-12 || !(st.NegLogPxSE > 0) || len(st.SampleIW) != 6 {
		t.Errorf("-ais-sample 6 of 20: settled %+v, AIS %+v", st, a)
	}
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "2", "-ais-steps", "3", "-ais-sample", "21"), io.Discard); err == nil || !strings.Contains(err.Error(), "-ais-sample 21 of 20") {
		t.Errorf("-ais-sample 21 of 20 images: err %v", err)
	}

	// The same network evaluated with float32 products: close to, and
	// recorded apart from, the float64 evaluation; -eval-precision equal to
	// the training's changes nothing.
	f64 := s.Test
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "2", "-eval-precision", "float32"), io.Discard); err != nil {
		t.Fatal(err)
	}
	if s = readSummary(t, out); s.EvalPrecision != "float32" || s.Config.Precision != nn.Float64 ||
		s.Test.NegLogPx == f64.NegLogPx || math.Abs(s.Test.NegLogPx-f64.NegLogPx) > 0.05 {
		t.Errorf("-eval-precision float32: precision %q (training %v), IW %v against %v in float64", s.EvalPrecision, s.Config.Precision, s.Test.NegLogPx, f64.NegLogPx)
	}
	if err := runTraining(context.Background(), runFlags(t, out, "-epochs", "2", "-eval-precision", "float64"), io.Discard); err != nil {
		t.Fatal(err)
	}
	if s = readSummary(t, out); s.EvalPrecision != "" || s.Test.NegLogPx != f64.NegLogPx {
		t.Errorf("-eval-precision float64 on a float64 run: precision %q, IW %v against %v", s.EvalPrecision, s.Test.NegLogPx, f64.NegLogPx)
	}

	err = runTraining(context.Background(), runFlags(t, out, "-epochs", "3", "-estimator", "concrete"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "estimator") {
		t.Errorf("resuming with another estimator: err %v", err)
	}
}

// TestOldCheckpointRefused writes a checkpoint as examples/vae did before
// it trained through vi.FitAmortized (vae.Task with train.Run, into
// -out/checkpoint, no run.json: the same file format and fingerprint),
// checks that train's fingerprint alone would resume it, and that run
// refuses it.
func TestOldCheckpointRefused(t *testing.T) {
	longtest.Skip(t, "trains on MNIST for a few steps")
	if _, err := os.Stat(mnistDir); err != nil {
		t.Skipf("MNIST not found at %s: %v", mnistDir, err)
	}
	trainAll, _, err := dataset.LoadMNIST(mnistDir)
	if err != nil {
		t.Fatal(err)
	}
	fit := trainAll.Subset(seq(300))
	cfg := vae.DefaultConfig()
	cfg.Estimator = vae.GumbelSpace
	newModel := func() *vae.Model {
		m, err := vae.New(cfg, rand.New(rand.NewPCG(1, 0x7661)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	out := t.TempDir()
	ck := filepath.Join(out, "checkpoint")
	m := newModel()
	task, err := vae.NewTask(m, fit, vae.DefaultAnneal())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(context.Background(), m.Params(), task, train.Options{N: 300, BatchSize: 100, Epochs: 1, Seed: 1,
		LR: optim.Constant(1e-3), Checkpoint: ck}); err != nil {
		t.Fatal(err)
	}
	// Without the guard, the fit would take the old checkpoint as its own.
	m = newModel()
	am, err := vae.NewAmortized(m, fit)
	if err != nil {
		t.Fatal(err)
	}
	fo, err := m.AmortizedOptions(vae.DefaultAnneal())
	if err != nil {
		t.Fatal(err)
	}
	fo.BatchSize, fo.Epochs, fo.Seed, fo.Checkpoint = 100, 1, 1, filepath.Join(t.TempDir(), "copy")
	old, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fo.Checkpoint, old, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := vi.FitAmortized(context.Background(), am, m.Encoder(), fo)
	if err != nil || res.Resumed != 3 {
		t.Fatalf("vi.FitAmortized on the old checkpoint: resumed from %v, err %v; the guard is untested", res, err)
	}
	err = runTraining(context.Background(), runFlags(t, out, "-epochs", "1"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "older examples/vae") {
		t.Errorf("old checkpoint: err %v", err)
	}
}

// cancelAt is a progress writer that cancels a run once its output holds
// the text at.
type cancelAt struct {
	at     string
	cancel context.CancelFunc
	buf    strings.Builder
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.at) {
		c.cancel()
	}
	return len(p), nil
}

// TestAISResumes interrupts AIS after some images and runs the same
// command again: it goes on from ais_partial.json and ends with the
// estimate of a run that never stopped, bit for bit; the file goes with
// the summary, and a partial file of other settings is refused.
func TestAISResumes(t *testing.T) {
	longtest.Skip(t, "trains on MNIST for a few seconds")
	if _, err := os.Stat(mnistDir); err != nil {
		t.Skipf("MNIST not found at %s: %v", mnistDir, err)
	}
	flags := []string{"-epochs", "1", "-ais-steps", "3", "-ais-chains", "2", "-ais-sample", "12"}
	whole := t.TempDir()
	if err := runTraining(context.Background(), runFlags(t, whole, flags...), io.Discard); err != nil {
		t.Fatal(err)
	}
	want := readSummary(t, whole)

	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelAt{at: "5/12 images", cancel: cancel}
	if err := runTraining(ctx, runFlags(t, out, flags...), w); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err %v, output\n%s", err, w.buf.String())
	}
	partialPath := filepath.Join(out, aisPartialName)
	saved, err := os.ReadFile(partialPath)
	if err != nil {
		t.Fatal(err)
	}
	var p aisPartial
	if err := json.Unmarshal(saved, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Done) < 5 || len(p.Done) >= 12 || p.Steps != 3 || len(p.Subset) != 12 {
		t.Fatalf("partial file after the interruption: %+v", p)
	}
	var progress strings.Builder
	if err := runTraining(context.Background(), runFlags(t, out, flags...), &progress); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), fmt.Sprintf("resuming with %d images done", len(p.Done))) {
		t.Errorf("the second run did not say it resumed:\n%s", progress.String())
	}
	if strings.Contains(progress.String(), "): 1/12 images") {
		t.Errorf("the second run annealed the images the first had done:\n%s", progress.String())
	}
	got := readSummary(t, out)
	if got.AIS.NegLogPx != want.AIS.NegLogPx || got.AIS.LogWeightSD != want.AIS.LogWeightSD ||
		got.Settled.NegLogPx != want.Settled.NegLogPx || !slices.Equal(got.Settled.SampleAIS, want.Settled.SampleAIS) {
		t.Errorf("resumed AIS %+v, settled %+v; uninterrupted %+v, %+v", got.AIS, got.Settled, want.AIS, want.Settled)
	}
	if _, err := os.Stat(partialPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left after the summary: %v", partialPath, err)
	}

	// The partial file of this run, found by a run with another schedule.
	if err := os.WriteFile(partialPath, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	other := append(slices.Clone(flags), "-ais-steps", "4")
	if err := runTraining(context.Background(), runFlags(t, out, other...), io.Discard); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Errorf("partial file of 3 steps, run of 4: err %v", err)
	}
}

// TestBinarizeOnce: -binarize fixed draws every image once, each set from
// its own stream, leaving the inputs as they were; the binary images then
// pass the dynamic binarization of training and Evaluate unchanged.
func TestBinarizeOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(n int) *dataset.Images {
		im := &dataset.Images{N: n, Channels: 1, Height: 2, Width: 2, Pixels: make([]float64, 4*n)}
		for i := range im.Pixels {
			im.Pixels[i] = rng.Float64()
		}
		return im
	}
	a, b, c := mk(50), mk(50), mk(50)
	before := slices.Clone(a.Pixels)
	x, y, z, err := binarizeOnce(7, a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Pixels, before) {
		t.Error("binarizeOnce changed its input")
	}
	x2, _, _, err := binarizeOnce(7, a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.Pixels, x2.Pixels) {
		t.Error("the same seed gave another binarization")
	}
	for _, im := range []*dataset.Images{x, y, z} {
		again, err := vae.Binarize(nil, im.Pixels, rand.New(rand.NewPCG(99, 99)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again, im.Pixels) {
			t.Error("a binary image changed under a further binarization")
		}
		for _, v := range im.Pixels {
			if v != 0 && v != 1 {
				t.Fatalf("pixel %v", v)
			}
		}
	}
	b1, _, _, err := binarizeOnce(7, b, a, c) // b from stream 1, not 2
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(b1.Pixels, y.Pixels) {
		t.Error("the sets should come from streams of their own")
	}
}
