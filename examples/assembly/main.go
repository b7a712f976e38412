// Command assembly trains a Sinkhorn network that assembles the pieces of any
// MNIST digit into a chosen digit (Mena et al., ICLR 2018, Section 4.3 and
// Table 5), judges the assemblies with an MNIST classifier, and draws a
// figure like the paper's Figure 3b.
//
// The network has one convolutional trunk and one dense output head per
// target class; head k is trained only on scrambled digits of class k. At
// test time the pieces of every test digit are given to every head, and the
// hard reconstruction is labelled by a classifier from package
// networks/digits: the rate at which it sees the intended class is the
// paper's Table 5 (85.1% overall).
//
// The paper cuts digits into 10 × 10 pieces (2.8 px each). 28 px divides
// into 7 × 7 pieces of 4 px or 14 × 14 pieces of 2 px without padding or
// resampling; the default is 14 × 14 (-p 14), the smaller pieces, which the
// assembly rate on validation digits favoured by 12 points (91.9% against
// 79.7% for -p 7, networks/jigsaw/README.md). Pass -val to judge validation
// digits (the last 10,000 training digits, seen by neither network) when
// tuning. Training checkpoints to assembly_pP.ckpt under -out every 1,000
// steps and on Ctrl-C; the same command run again goes on from it.
//
//	go run ./examples/assembly -mnist DIR -classifier networks/digits/testdata/digits.nn -out /tmp/assembly
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/cli"
	"github.com/permlab/permlab/networks/digits"
	"github.com/permlab/permlab/networks/jigsaw"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// trainingFlags are the flags that shape or train the network, which mean
// nothing with -model.
var trainingFlags = []string{"steps", "batch", "lr", "filters", "kernel", "pool", "tau", "iters", "samples", "noise", "hidden", "context"}

// parse reads and checks the flags, and checks that the files they name are
// there and that -out can be written, before any data is read; its errors
// are usage errors (exit status 2) that name the flag.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("assembly", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mnist, "mnist", "", "folder with the four MNIST IDX files (required)")
	fs.StringVar(&o.classifier, "classifier", "", "checkpoint of a networks/digits classifier that judges the assemblies (none: skip the evaluation)")
	fs.StringVar(&o.out, "out", filepath.Join("out", "assembly"), "output folder for the JSON, PNG and checkpoint (made if missing; the default is under out/, which git ignores)")
	fs.StringVar(&o.model, "model", "", "load this assembly network instead of training one (its -p must be given; the training flags go)")
	fs.IntVar(&o.p, "p", 14, "pieces per side, 2 to 28")
	fs.IntVar(&o.steps, "steps", 4000, "Adam steps")
	fs.IntVar(&o.batch, "batch", 32, "images per step")
	fs.Float64Var(&o.lr, "lr", 1e-3, "Adam learning rate")
	fs.IntVar(&o.evalN, "eval", 0, "judge the first n test digits only (0: all 10,000)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the weights, minibatches, scrambling and noise")
	def := jigsaw.DefaultConfig(7)
	fs.IntVar(&o.cfg.Filters, "filters", def.Filters, "convolution filters n_f")
	fs.IntVar(&o.cfg.Kernel, "kernel", 3, "convolution kernel side K_s (odd)")
	fs.IntVar(&o.cfg.Pool, "pool", def.Pool, "max-pool side and stride s, at most the piece side 28/p")
	fs.Float64Var(&o.cfg.Tau, "tau", def.Tau, "Sinkhorn temperature in training")
	fs.IntVar(&o.cfg.Iters, "iters", def.Iters, "Sinkhorn iterations L")
	fs.IntVar(&o.cfg.Samples, "samples", def.Samples, "Gumbel samples per image")
	fs.Float64Var(&o.cfg.Noise, "noise", def.Noise, "scale of the Gumbel noise")
	fs.IntVar(&o.cfg.Hidden, "hidden", 0, "ReLU units of a hidden layer after the pooled features (0: the paper's network)")
	fs.BoolVar(&o.cfg.Context, "context", false, "feed the hidden layer the puzzle's mean piece feature too (needs -hidden)")
	fs.BoolVar(&o.val, "val", false, "judge the validation digits (last 10,000 training digits, seen by neither network), for tuning, instead of the test digits")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	if err := cli.Parse(fs, args); err != nil {
		return o, err
	}
	var c cli.Check
	c.That(o.p >= 2 && o.p <= 28, "-p must be in [2, 28], got %d", o.p)
	c.AtLeast("-eval", o.evalN, 0)
	if o.model != "" {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, name := range trainingFlags {
			c.That(!given[name], "-%s trains a network; it does not go with -model, which loads one", name)
		}
	} else {
		c.AtLeast("-steps", o.steps, 1)
		c.AtLeast("-batch", o.batch, 1)
		c.Positive("-lr", o.lr)
		c.AtLeast("-filters", o.cfg.Filters, 1)
		c.That(o.cfg.Kernel >= 1 && o.cfg.Kernel%2 == 1, "-kernel must be odd and >= 1, got %d", o.cfg.Kernel)
		c.AtLeast("-pool", o.cfg.Pool, 1)
		c.That(o.cfg.Pool <= 28/max(o.p, 1), "-pool %d exceeds the %d px pieces of -p %d", o.cfg.Pool, 28/max(o.p, 1), o.p)
		c.Positive("-tau", o.cfg.Tau)
		c.AtLeast("-iters", o.cfg.Iters, 1)
		c.AtLeast("-samples", o.cfg.Samples, 1)
		c.NonNegative("-noise", o.cfg.Noise)
		c.AtLeast("-hidden", o.cfg.Hidden, 0)
		c.That(!o.cfg.Context || o.cfg.Hidden > 0, "-context needs -hidden > 0")
	}
	if err := c.Err(); err != nil {
		return o, err
	}
	if o.mnist == "" {
		return o, cli.Usagef("no data: pass -mnist DIR (%s)", dataset.MNISTHelp)
	}
	if err := cli.InputDir("-mnist", o.mnist); err != nil {
		return o, cli.Usagef("%v: %s", err, dataset.MNISTHelp)
	}
	if o.classifier != "" {
		c.InputFile("-classifier", o.classifier)
	}
	if o.model != "" {
		c.InputFile("-model", o.model)
	}
	c.OutputDir("-out", o.out)
	return o, c.Err()
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure, 130 when interrupted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err == nil {
		err = assemble(ctx, o, stdout, stderr)
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "assembly: interrupted")
		return 130
	}
	return cli.Exit(stderr, "assembly", err)
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

// assemble trains or loads the network, judges it and writes the results.
func assemble(ctx context.Context, o options, stdout, stderr io.Writer) error {
	var loaded *jigsaw.Net
	if o.model != "" {
		var err error
		if loaded, err = jigsaw.LoadFile(o.model); err != nil {
			return err
		}
		if p := loaded.Grid().P; p != o.p {
			return cli.Usagef("-model %s has %d pieces per side, -p says %d: pass -p %d", o.model, p, o.p, p)
		}
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
	net := loaded
	if net != nil {
		// Training settings live in the JSON of the run that trained it.
		res.Steps, res.Batch, res.LR, res.Model = 0, 0, 0, o.model
	} else if net, err = trainNet(ctx, o, train, &res, stderr); err != nil {
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
		fmt.Fprintln(stderr, "no -classifier: assemblies not judged")
	} else {
		clf, err := digits.Load(o.classifier)
		if err != nil {
			return err
		}
		res.Classifier = o.classifier
		if res.ClassifierAccuracy, err = clf.Accuracy(held); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "classifier accuracy on the %d evaluation digits: %.4f\n", held.N, res.ClassifierAccuracy)
		g := net.Grid()
		classify := func(pix []float64, count int) ([]int, error) {
			return clf.Predict(&dataset.Images{N: count, Channels: g.Channels, Height: g.Height, Width: g.Width, Pixels: pix})
		}
		if res.Assembly, err = net.AssemblyRates(z, classify); err != nil {
			return err
		}
		fmt.Fprint(stdout, formatRates(res.Assembly))
	}
	if err := writeJSON(base+".json", res); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s.{json,png}\n", base)
	return nil
}

// trainNet trains the network of the options, going on from the
// checkpoint an earlier run left in -out.
func trainNet(ctx context.Context, o options, train *dataset.Images, res *result, stderr io.Writer) (*jigsaw.Net, error) {
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
			fmt.Fprintf(stderr, "step %d/%d loss %.5f %.0f images/s\n", step, o.steps, loss, ips)
		}
	}
	tc.Resumed = func(step int, _ float64) {
		fmt.Fprintf(stderr, "resuming from step %d of %s\n", step, ckpt)
	}
	fmt.Fprintf(stderr, "%dx%d pieces of %d px, 10 heads, %d parameters, %d steps of %d\n", o.p, o.p, net.Grid().PieceH, net.NumParams(), o.steps, o.batch)
	tr, err := net.Train(ctx, jigsaw.Data{Pixels: train.Pixels, Labels: train.Labels}, tc)
	if err != nil {
		if tr != nil && ctx.Err() != nil {
			fmt.Fprintf(stderr, "stopped after step %d; the same command goes on from %s\n", len(tr.Losses), ckpt)
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
