// Command assembly trains a Sinkhorn network that assembles the pieces of any
// MNIST digit into a chosen digit (Mena et al., ICLR 2018, Section 4.3 and
// Table 5), judges the assemblies with an MNIST classifier, and draws a
// figure like the paper's Figure 3b.
//
// The network has one convolutional trunk and one dense output head per
// target class; head k is trained only on scrambled digits of class k. At
// test time the pieces of every test digit are given to every head, and the
// hard reconstruction is labelled by a classifier from package
// models/digits: the rate at which it sees the intended class is the
// paper's Table 5 (85.1% overall).
//
// The paper cuts digits into 10 × 10 pieces (2.8 px each). 28 px divides
// into 7 × 7 pieces of 4 px or 14 × 14 pieces of 2 px without padding or
// resampling; the default is 14 × 14 (-p 14), the smaller pieces, which the
// assembly rate on validation digits favoured by 12 points (91.9% against
// 79.7% for -p 7, models/jigsaw/README.md). Pass -val to judge validation
// digits (the last 10,000 training digits, seen by neither network) when
// tuning. Training checkpoints to assembly_pP.ckpt under -out every 1,000
// steps and on Ctrl-C; the same command run again goes on from it.
//
//	go run ./examples/assembly -mnist DIR -classifier models/digits/testdata/digits.nn -out /tmp/assembly
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/models/digits"
	"github.com/permlab/permlab/models/jigsaw"
)

type options struct {
	mnist, classifier, out, model string
	p, steps, batch, evalN        int
	lr                            float64
	seed                          uint64
	cfg                           jigsaw.Config
	quiet, val                    bool
}

func main() {
	var o options
	flag.StringVar(&o.mnist, "mnist", "", "folder with the four MNIST IDX files")
	flag.StringVar(&o.classifier, "classifier", "", "checkpoint of a models/digits classifier that judges the assemblies (none: skip the evaluation)")
	flag.StringVar(&o.out, "out", ".", "output folder for the JSON, PNG and checkpoint")
	flag.StringVar(&o.model, "model", "", "load this assembly network instead of training one")
	flag.IntVar(&o.p, "p", 14, "pieces per side")
	flag.IntVar(&o.steps, "steps", 4000, "Adam steps")
	flag.IntVar(&o.batch, "batch", 32, "images per step")
	flag.Float64Var(&o.lr, "lr", 1e-3, "Adam learning rate")
	flag.IntVar(&o.evalN, "eval", 0, "judge the first n test digits only (0: all 10,000)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the weights, minibatches, scrambling and noise")
	def := jigsaw.DefaultConfig(7)
	flag.IntVar(&o.cfg.Filters, "filters", def.Filters, "convolution filters n_f")
	flag.IntVar(&o.cfg.Kernel, "kernel", 3, "convolution kernel side K_s (odd)")
	flag.IntVar(&o.cfg.Pool, "pool", def.Pool, "max-pool side and stride s")
	flag.Float64Var(&o.cfg.Tau, "tau", def.Tau, "Sinkhorn temperature in training")
	flag.IntVar(&o.cfg.Iters, "iters", def.Iters, "Sinkhorn iterations L")
	flag.IntVar(&o.cfg.Samples, "samples", def.Samples, "Gumbel samples per image")
	flag.Float64Var(&o.cfg.Noise, "noise", def.Noise, "scale of the Gumbel noise")
	flag.IntVar(&o.cfg.Hidden, "hidden", 0, "ReLU units of a hidden layer after the pooled features (0: the paper's network)")
	flag.BoolVar(&o.cfg.Context, "context", false, "feed the hidden layer the puzzle's mean piece feature too (needs -hidden)")
	flag.BoolVar(&o.val, "val", false, "judge the validation digits (last 10,000 training digits, seen by neither network), for tuning, instead of the test digits")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "assembly:", err)
		os.Exit(1)
	}
}

// result is the JSON the command writes.
type result struct {
	P         int           `json:"p"`
	PieceSide int           `json:"piece_px"`
	Config    jigsaw.Config `json:"config"`
	Steps     int           `json:"steps"`
	Batch     int           `json:"batch"`
	LR        float64       `json:"lr"`
	Seed      uint64        `json:"seed"`
	Params    int           `json:"params"`
	Split     string        `json:"eval_split"` // "test", or "validation" for tuning
	TrainSec  float64       `json:"train_seconds"`
	// ResumedFrom is the step training went on from, read from the
	// checkpoint an earlier run left in -out (0: trained in one go).
	ResumedFrom int    `json:"resumed_from,omitempty"`
	Model       string `json:"model,omitempty"`
	Classifier  string `json:"classifier,omitempty"`
	// ClassifierAccuracy is the classifier's accuracy on the untouched
	// evaluation digits.
	ClassifierAccuracy float64                `json:"classifier_accuracy,omitempty"`
	Assembly           *jigsaw.AssemblyResult `json:"assembly,omitempty"`
	GoMaxProcs         int                    `json:"gomaxprocs"`
	Command            string                 `json:"command"`
}

func run(ctx context.Context, o options) error {
	if o.mnist == "" {
		return errors.New("no data: pass -mnist DIR (" + dataset.MNISTHelp + ")")
	}
	full, test, err := dataset.LoadMNIST(o.mnist)
	if err != nil {
		return err
	}
	train, val, err := full.Split(50000)
	if err != nil {
		return err
	}
	if o.val {
		test = val
	}
	res := result{Split: split(o.val), P: o.p, Steps: o.steps, Batch: o.batch, LR: o.lr, Seed: o.seed, GoMaxProcs: runtime.GOMAXPROCS(0), Command: strings.Join(os.Args, " ")}
	net, err := trainOrLoad(ctx, o, train, &res)
	if err != nil {
		return err
	}
	res.Config, res.Params, res.PieceSide = net.Config(), net.NumParams(), net.Grid().PieceH
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(o.out, fmt.Sprintf("assembly_p%d", o.p))
	if o.model == "" {
		if err := net.SaveFile(base + ".gob"); err != nil {
			return err
		}
	}
	held := test
	if o.evalN > 0 && o.evalN < test.N {
		held = test.Subset(seqInts(o.evalN))
	}
	z, err := jigsaw.MakePuzzles(net.Grid(), held.Pixels, held.Labels, rand.New(rand.NewPCG(o.seed, 0x74657374)))
	if err != nil {
		return err
	}
	if err := writeFigure(base+".png", net, z); err != nil {
		return err
	}
	if o.classifier == "" {
		fmt.Fprintln(os.Stderr, "no -classifier: assemblies not judged")
	} else {
		clf, err := digits.Load(o.classifier)
		if err != nil {
			return err
		}
		res.Classifier = o.classifier
		if res.ClassifierAccuracy, err = clf.Accuracy(held); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "classifier accuracy on the %d evaluation digits: %.4f\n", held.N, res.ClassifierAccuracy)
		g := net.Grid()
		classify := func(pix []float64, count int) ([]int, error) {
			return clf.Predict(&dataset.Images{N: count, Channels: g.Channels, Height: g.Height, Width: g.Width, Pixels: pix})
		}
		if res.Assembly, err = net.AssemblyRates(z, classify); err != nil {
			return err
		}
		fmt.Print(formatRates(res.Assembly))
	}
	if err := writeJSON(base+".json", res); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s.{json,png}\n", base)
	return nil
}

func trainOrLoad(ctx context.Context, o options, train *dataset.Images, res *result) (*jigsaw.Net, error) {
	if o.model != "" {
		// Training settings live in the JSON of the run that trained it.
		res.Steps, res.Batch, res.LR, res.Model = 0, 0, 0, o.model
		return jigsaw.LoadFile(o.model)
	}
	cfg := o.cfg
	cfg.P, cfg.Channels, cfg.Height, cfg.Width, cfg.Heads = o.p, 1, 28, 28, 10
	net, err := jigsaw.New(cfg, o.seed)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	// Training resumes from this file (see jigsaw.TrainConfig.Checkpoint).
	ckpt := filepath.Join(o.out, fmt.Sprintf("assembly_p%d.ckpt", o.p))
	tc := jigsaw.TrainConfig{Steps: o.steps, Batch: o.batch, LR: o.lr, Seed: o.seed, ReportEvery: 100, Checkpoint: ckpt}
	if !o.quiet {
		tc.Progress = func(step int, loss, ips float64) {
			fmt.Fprintf(os.Stderr, "step %d/%d loss %.5f %.0f images/s\n", step, o.steps, loss, ips)
		}
	}
	tc.Resumed = func(step int, _ float64) {
		fmt.Fprintf(os.Stderr, "resuming from step %d of %s\n", step, ckpt)
	}
	fmt.Fprintf(os.Stderr, "%dx%d pieces of %d px, 10 heads, %d parameters, %d steps of %d\n", o.p, o.p, net.Grid().PieceH, net.NumParams(), o.steps, o.batch)
	tr, err := net.Train(ctx, jigsaw.Data{Pixels: train.Pixels, Labels: train.Labels}, tc)
	if err != nil {
		if tr != nil && ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "stopped after step %d; the same command goes on from %s\n", len(tr.Losses), ckpt)
		}
		return nil, err
	}
	res.ResumedFrom, res.TrainSec = tr.ResumedFrom, tr.Seconds
	return net, nil
}

func split(val bool) string {
	if val {
		return "validation"
	}
	return "test"
}

func seqInts(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// formatRates renders the 10 × 10 table of rates as markdown.
func formatRates(r *jigsaw.AssemblyResult) string {
	var b strings.Builder
	b.WriteString("| actual \\ becomes |")
	for k := range r.Rates {
		fmt.Fprintf(&b, " %d |", k)
	}
	b.WriteString("\n|---|")
	for range r.Rates {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for a, row := range r.Rates {
		fmt.Fprintf(&b, "| %d |", a)
		for _, v := range row {
			fmt.Fprintf(&b, " %.2f |", v)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\noverall: %.4f (paper: 0.851)\n", r.Overall)
	return b.String()
}
