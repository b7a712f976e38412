// Command vae trains the categorical variational autoencoder of package
// models/vae on binarized MNIST with one of three stochastic nodes, then
// evaluates the −ELBO and an importance-weighted −log p(x) on the test set.
// Training is vi.FitAmortized on the VAE as a models.Amortized
// (vae.NewAmortized) with its encoder as the amortized guide.
//
//	go run ./examples/vae -mnist DIR -estimator gumbel-softmax -epochs 5 -seed 1 -out runs/gs
//
// Run it with -h for the flags.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/atomicfile"
	"github.com/permlab/permlab/internal/cli"
	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/nn/train"
	"github.com/permlab/permlab/vi"
)

const usage = `Usage: go run ./examples/vae -mnist DIR [flags]

Trains the categorical VAE of Jang et al. (2016) (20 latents of 10 classes,
encoder 784-512-256-200, decoder 200-256-512-784, Adam, batch 100) on the
first 50,000 MNIST training images, binarized afresh every step, with the
stochastic node -estimator:

  gumbel-softmax  relaxed sample, analytic KL of the categorical to uniform
  concrete        relaxed Concrete densities, single-sample Monte Carlo KL
  gumbel-space    node (l + g)/τ with prior g/τ_p, closed-form Gumbel KL

The last 10,000 training images are the validation set (its −ELBO is
printed after every epoch); the test set is used once, at the end, for the
−ELBO and the importance-weighted −log p(x) with -iw-k samples on the first
-test-n test images (0: all 10,000). Tuning runs pass -eval-split
validation: the final evaluation then uses the first -test-n validation
images instead, and no test image is used. With -ais-steps T the final
evaluation also estimates −log p(x) by annealed importance sampling
(vae.Model.AIS: -ais-chains chains per image, each T Gibbs steps from
q(z | x) towards the posterior), which settles with far fewer decoder
evaluations than the IW estimate; -ais-sample N runs it on N of those
images drawn at random instead, and estimates the mean AIS −log p(x) of
all of them as the IW estimate minus the IW − AIS gap on the sample
(vae.Settle), with its standard error; -bdmc N adds bidirectional Monte
Carlo on N images simulated from the model, whose gap bounds the error of
that schedule on such data.

Training is vi.FitAmortized, the library's amortized variational inference,
on the VAE as a model with a local categorical site per image. It
checkpoints to -out/checkpoint and resumes from it: run the same command
again after an interruption (or with more -epochs to go on). -out/run.json
records the settings the checkpoint belongs to; a checkpoint with other
settings, or one without run.json (written by an older examples/vae, which
trained through vae.Task), is refused with an error: delete it to start
afresh. At the end -out holds summary.json, model.plnn (the parameters,
package nn's format), curves.png (learning curves), recon.png (validation
images over their reconstructions) and samples.png (decoded draws from the
prior).

Flags:
`

type options struct {
	mnist, estimator, out string
	evalSplit, report     string
	against               string
	precision, evalPrec   string
	epochs, batch         int
	seed, evalSeed        uint64
	lr, priorTemp         float64
	tau0, tauMin, rate    float64
	every, iwK, testN     int
	valN, trainN          int
	aisSteps, aisChains   int
	aisSample, bdmc       int
	binarize              string
	binarizeSeed          uint64
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := new(options)
	fs := flag.NewFlagSet("vae", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.mnist, "mnist", "", "folder holding the four MNIST IDX files (required)")
	fs.StringVar(&o.estimator, "estimator", "gumbel-softmax", "stochastic node: gumbel-softmax, concrete or gumbel-space")
	fs.StringVar(&o.out, "out", filepath.Join("out", "vae"), "output folder (checkpoint, summary.json, figures; the default is under out/, which git ignores)")
	fs.IntVar(&o.epochs, "epochs", 5, "passes over the 50,000 training images")
	fs.IntVar(&o.batch, "batch", 100, "minibatch size")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the weights, the minibatch order, the binarization and the noise")
	fs.Uint64Var(&o.evalSeed, "eval-seed", 0, "seed of the test set's fixed binarization and of the evaluation samples")
	fs.Float64Var(&o.lr, "lr", 1e-3, "Adam learning rate")
	fs.Float64Var(&o.priorTemp, "prior-temp", 0, "prior temperature for concrete and gumbel-space (0: the posterior's)")
	fs.Float64Var(&o.tau0, "tau0", 1, "initial temperature")
	fs.Float64Var(&o.tauMin, "tau-min", 0.5, "final temperature")
	fs.Float64Var(&o.rate, "anneal-rate", 1e-4, "r in τ = max(tau-min, tau0·exp(−r·step))")
	fs.IntVar(&o.every, "anneal-every", 500, "steps between temperature updates")
	fs.IntVar(&o.iwK, "iw-k", 100, "importance samples per image of the final evaluation")
	fs.IntVar(&o.testN, "test-n", 1000, "images of the final evaluation (0: all)")
	fs.StringVar(&o.evalSplit, "eval-split", "test", "final evaluation on the \"test\" set or, for tuning, on the \"validation\" images")
	fs.IntVar(&o.valN, "val-n", 1000, "validation images for the per-epoch −ELBO")
	fs.IntVar(&o.trainN, "train-n", 50000, "train on the first train-n of the 50,000 training images (for quick checks)")
	fs.StringVar(&o.precision, "precision", "float64", "arithmetic of the dense layers' matrix products: float64, or float32 (about 1.3 times faster per step on one thread; parameters and everything else stay float64)")
	fs.StringVar(&o.evalPrec, "eval-precision", "", "arithmetic of the matrix products of the final −ELBO and IW evaluation, float64 or float32 (empty: -precision's); AIS always runs in float64")
	fs.IntVar(&o.aisSteps, "ais-steps", 0, "also estimate −log p(x) of the final evaluation's images by annealed importance sampling with this many intermediate distributions (0: off)")
	fs.IntVar(&o.aisChains, "ais-chains", 4, "AIS chains per image")
	fs.IntVar(&o.aisSample, "ais-sample", 0, "with -ais-steps: run AIS on this many of the final evaluation's images drawn at random (from -eval-seed) instead of all, and estimate the mean AIS −log p(x) of all of them as the IW estimate minus the mean IW − AIS gap on the sample (vae.Settle), with its standard error (0: AIS on all)")
	fs.IntVar(&o.bdmc, "bdmc", 0, "with -ais-steps: also run bidirectional Monte Carlo on this many images simulated from the trained model, which bounds the error of AIS with that schedule")
	fs.StringVar(&o.binarize, "binarize", "dynamic", "binarization of the images: dynamic (training images drawn afresh every step, evaluation images once from -eval-seed) or fixed (every image drawn once from -binarize-seed before training: the protocol of Jang et al.)")
	fs.Uint64Var(&o.binarizeSeed, "binarize-seed", 1, "with -binarize fixed: the seed of the one binarization")
	fs.StringVar(&o.report, "report", "", "print the Markdown tables of the summary.json files under this folder and exit (trains nothing)")
	fs.StringVar(&o.against, "against", "", "with -report: pair every run under -report with the run of the same estimator, prior temperature, seed, epochs and evaluation under this folder, and print their differences instead (a float32 run against the float64 run of its seed, say)")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	var c cli.Check
	if o.report != "" {
		c.InputDir("-report", o.report)
		if o.against != "" {
			c.InputDir("-against", o.against)
		}
		return o, c.Err()
	}
	c.That(o.against == "", "-against needs -report")
	if _, err := vae.ParseEstimator(o.estimator); err != nil {
		c.Add(cli.Usagef("-estimator: %s", strings.TrimPrefix(err.Error(), "vae: ")))
	}
	c.AtLeast("-epochs", o.epochs, 1)
	c.AtLeast("-batch", o.batch, 1)
	c.Positive("-lr", o.lr)
	c.NonNegative("-prior-temp", o.priorTemp)
	c.Positive("-tau0", o.tau0)
	c.Positive("-tau-min", o.tauMin)
	c.That(!(o.tauMin > o.tau0), "-tau-min %v must be at most -tau0 %v", o.tauMin, o.tau0)
	c.NonNegative("-anneal-rate", o.rate)
	c.AtLeast("-anneal-every", o.every, 1)
	c.AtLeast("-iw-k", o.iwK, 1)
	c.AtLeast("-test-n", o.testN, 0)
	c.That(o.testN != 1, "-test-n 1: the standard errors in summary.json need at least 2 images")
	c.AtLeast("-val-n", o.valN, 1)
	c.That(o.trainN >= 1 && o.trainN <= 50000, "-train-n must be in [1, 50000] (the training images), got %d", o.trainN)
	c.OneOf("-eval-split", o.evalSplit, "test", "validation")
	c.OneOf("-binarize", o.binarize, "dynamic", "fixed")
	c.That(o.binarize == "fixed" || !cli.Given(fs, "binarize-seed"), "-binarize-seed needs -binarize fixed")
	if _, err := nn.ParsePrecision(o.precision); err != nil {
		c.Add(cli.Usagef("-precision: %v", err))
	}
	if o.evalPrec != "" {
		if _, err := nn.ParsePrecision(o.evalPrec); err != nil {
			c.Add(cli.Usagef("-eval-precision: %v", err))
		}
	}
	c.AtLeast("-ais-steps", o.aisSteps, 0)
	c.AtLeast("-ais-chains", o.aisChains, 2)
	c.That(o.bdmc >= 0 && o.bdmc != 1, "-bdmc must be 0 or >= 2, got %d", o.bdmc)
	c.That(o.bdmc == 0 || o.aisSteps > 0, "-bdmc needs -ais-steps")
	c.That(o.aisSample >= 0 && o.aisSample != 1, "-ais-sample must be 0 or >= 2 (the standard error needs two images), got %d", o.aisSample)
	c.That(o.aisSample == 0 || o.aisSteps > 0, "-ais-sample needs -ais-steps")
	if err := c.Err(); err != nil {
		return nil, err
	}
	if o.mnist == "" {
		return nil, cli.Usagef("no -mnist folder: %s", dataset.MNISTHelp)
	}
	if err := cli.InputDir("-mnist", o.mnist); err != nil {
		return nil, cli.Usagef("%v: %s", err, dataset.MNISTHelp)
	}
	c.OutputDir("-out", o.out)
	return o, c.Err()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	switch {
	case err != nil:
	case o.report != "":
		err = writeReport(o, stdout)
	default:
		err = runTraining(ctx, o, stderr)
	}
	return cli.Exit(stderr, "vae", err)
}

// summary is what summary.json holds.
type summary struct {
	Estimator  string     `json:"estimator"`
	Config     vae.Config `json:"config"`
	Anneal     vae.Anneal `json:"anneal"`
	Seed       uint64     `json:"seed"`
	EvalSeed   uint64     `json:"eval_seed"`
	Epochs     int        `json:"epochs"`
	Steps      int        `json:"steps"`
	BatchSize  int        `json:"batch_size"`
	LR         float64    `json:"lr"`
	FinalTemp  float64    `json:"final_temperature"`
	TrainSecs  float64    `json:"train_seconds"` // wall time of this invocation's training
	SecsPerEp  float64    `json:"seconds_per_epoch"`
	TrainLoss  []float64  `json:"train_neg_elbo_by_epoch"`
	ValNegELBO []*float64 `json:"val_neg_elbo_by_epoch"`    // null where unknown (val.json lost)
	ValStdErr  []*float64 `json:"val_neg_elbo_se_by_epoch"` // its standard error over images
	ValImages  int        `json:"val_images"`
	Validation string     `json:"validation"`
	EvalSplit  string     `json:"eval_split"` // "test", or "validation" for tuning runs
	// EvalPrecision is the arithmetic of the final evaluation's products
	// when -eval-precision made it differ from the training's.
	EvalPrecision string    `json:"eval_precision,omitempty"`
	Test          *vae.Eval `json:"test,omitempty"`            // the test set, when EvalSplit is "test"
	ValEval       *vae.Eval `json:"validation_eval,omitempty"` // the validation images, when EvalSplit is "validation"
	EvalSecs      float64   `json:"eval_seconds"`
	// AIS is annealed importance sampling on the final evaluation's
	// images (-ais-steps), BDMC its check on simulated data (-bdmc).
	AIS     *vae.AISEval `json:"ais,omitempty"`
	AISSecs float64      `json:"ais_seconds,omitempty"`
	// Settled is the estimate of the mean AIS −log p(x) of all the final
	// evaluation's images when AIS ran on a random sample of them
	// (-ais-sample).
	Settled     *vae.Settled  `json:"settled,omitempty"`
	BDMC        *vae.BDMCEval `json:"bdmc,omitempty"`
	BDMCSecs    float64       `json:"bdmc_seconds,omitempty"`
	Binarize    string        `json:"binarization"`
	CodePath    string        `json:"code_path"`
	Command     []string      `json:"command"`
	Paper       paperNumbers  `json:"paper_neg_log_px"`
	ResumedStep int           `json:"resumed_from_step"`
}

type paperNumbers struct {
	GumbelSoftmax float64 `json:"gumbel-softmax"`
	Concrete      float64 `json:"concrete"`
	GumbelSpace   float64 `json:"gumbel-space"`
}

// codePath names how this version trains, in run.json and summary.json.
const codePath = "vi.FitAmortized on vae.NewAmortized with Model.Encoder"

// runInfo is what run.json holds: the settings a checkpoint belongs to,
// beyond those of train's own fingerprint (images, batch size, seed,
// parameter names and shapes), which a resumed run must repeat.
type runInfo struct {
	CodePath  string     `json:"code_path"`
	Estimator string     `json:"estimator"`
	PriorTemp float64    `json:"prior_temp"`
	Anneal    vae.Anneal `json:"anneal"`
	LR        float64    `json:"lr"`
	BatchSize int        `json:"batch_size"`
	Seed      uint64     `json:"seed"`
	TrainN    int        `json:"train_images"`
	ValN      int        `json:"val_images"`
	// Precision is "float32" for a run with float32 products, and empty
	// (absent) for float64, so that run.json files written before the
	// option existed still match their float64 runs.
	Precision string `json:"precision,omitempty"`
	// Binarize describes a fixed binarization (-binarize fixed), empty
	// (absent) for the dynamic one, as for Precision.
	Binarize string `json:"binarize,omitempty"`
}

// prepareCheckpoint decides whether the run in dir resumes. With no
// checkpoint it writes run.json for info and returns false. With one it
// returns true if run.json matches info, and an error otherwise: a
// checkpoint without run.json was written by examples/vae before it
// trained through vi.FitAmortized (its parameters have the same names and
// shapes, so train's fingerprint alone would accept it), and one with
// other settings would silently continue another run.
func prepareCheckpoint(dir string, info runInfo) (bool, error) {
	ck, path := filepath.Join(dir, "checkpoint"), filepath.Join(dir, "run.json")
	want, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(ck); errors.Is(err, fs.ErrNotExist) {
		return false, atomicfile.WriteFile(path, append(want, '\n'))
	} else if err != nil {
		return false, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%s has no %s: it was written by an older examples/vae, which trained through vae.Task and train.Run, and is not resumed by this version (which trains through %s); delete it and %s to start afresh, or finish that run with the older version",
			ck, path, codePath, filepath.Join(dir, "val.json"))
	}
	if err != nil {
		return false, err
	}
	var got, exp map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		return false, fmt.Errorf("%s: %w (delete it with %s to start afresh)", path, err, ck)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		return false, err
	}
	// Every key of either file: one that only the checkpoint's run.json
	// has (such as "precision") is a setting this run does not repeat.
	keys := make([]string, 0, len(exp))
	for k := range exp {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := exp[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !reflect.DeepEqual(got[k], exp[k]) {
			g, _ := json.Marshal(got[k])
			e, _ := json.Marshal(exp[k])
			if _, ok := exp[k]; !ok {
				e = []byte("none")
			}
			if _, ok := got[k]; !ok {
				g = []byte("none")
			}
			return false, fmt.Errorf("%s belongs to a run with %s %s, this one has %s; use the same flags to resume, or delete %s to start afresh",
				ck, k, g, e, ck)
		}
	}
	return true, nil
}

// heldOut is the validation −ELBO of one epoch, as val.json holds it.
type heldOut struct {
	NegELBO float64 `json:"neg_elbo"`
	StdErr  float64 `json:"std_err"`
}

const validation = "vi.EvalAmortized after every epoch: discrete −ELBO per image, one one-hot sample z ~ q(z | x) and the analytic KL, binarization and samples fixed by a seed derived from -seed"

// runTraining trains the VAE the options describe, evaluates it and writes the
// results to -out.
func runTraining(ctx context.Context, o *options, progress io.Writer) error {
	est, err := vae.ParseEstimator(o.estimator)
	if err != nil {
		return err
	}
	trainAll, test, err := dataset.LoadMNIST(o.mnist)
	if err != nil {
		return err
	}
	fit, val, err := trainAll.Split(50000)
	if err != nil {
		return err
	}
	if o.trainN < fit.N {
		fit = fit.Subset(seq(o.trainN))
	}
	final := test // the final evaluation's images
	if o.evalSplit == "validation" {
		final = val
	}
	if o.testN > 0 && o.testN < final.N {
		final = final.Subset(seq(o.testN))
	}
	val = val.Subset(seq(min(o.valN, val.N)))
	binText := "dynamic Bernoulli(intensity) per training step; test set binarized once from -eval-seed"
	if o.binarize == "fixed" {
		// Binary images stay as they are under the dynamic binarization
		// of training and the one of Evaluate (Bernoulli of 0 or 1).
		if fit, val, final, err = binarizeOnce(o.binarizeSeed, fit, val, final); err != nil {
			return err
		}
		binText = fmt.Sprintf("fixed: every image drawn once from Bernoulli(intensity) with -binarize-seed %d before training (training, validation and evaluation images from streams 1, 2 and 3), the protocol of Jang et al.", o.binarizeSeed)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	cfg := vae.DefaultConfig()
	cfg.Estimator, cfg.PriorTemp = est, o.priorTemp
	if cfg.Precision, err = nn.ParsePrecision(o.precision); err != nil {
		return err
	}
	m, err := vae.New(cfg, rand.New(rand.NewPCG(o.seed, 0x7661))) // "va"
	if err != nil {
		return err
	}
	an := vae.Anneal{Start: o.tau0, Min: o.tauMin, Rate: o.rate, Every: o.every}
	fo, err := m.AmortizedOptions(an)
	if err != nil {
		return err
	}
	am, err := vae.NewAmortized(m, fit)
	if err != nil {
		return err
	}
	valModel, err := vae.NewAmortized(m, val)
	if err != nil {
		return err
	}
	info := runInfo{CodePath: codePath, Estimator: est.String(), PriorTemp: o.priorTemp,
		Anneal: an, LR: o.lr, BatchSize: o.batch, Seed: o.seed, TrainN: fit.N, ValN: val.N}
	if cfg.Precision != nn.Float64 {
		info.Precision = cfg.Precision.String()
	}
	if o.binarize == "fixed" {
		info.Binarize = binText
	}
	resuming, err := prepareCheckpoint(o.out, info)
	if err != nil {
		return err
	}
	valPath := filepath.Join(o.out, "val.json")
	valByEpoch := map[int]heldOut{}
	if resuming {
		if b, err := os.ReadFile(valPath); err == nil {
			if err := json.Unmarshal(b, &valByEpoch); err != nil {
				return fmt.Errorf("%s: %w (delete it with the checkpoint to start afresh)", valPath, err)
			}
		}
	}
	fo.BatchSize, fo.Epochs, fo.Seed, fo.LR = o.batch, o.epochs, o.seed, optim.Constant(o.lr)
	fo.Checkpoint, fo.Progress = filepath.Join(o.out, "checkpoint"), progress
	fo.Validation, fo.EvalK = valModel, 1
	fo.OnEpoch = func(ep vi.AmortizedEpoch) error {
		valByEpoch[ep.Epoch] = heldOut{NegELBO: ep.HeldOut, StdErr: ep.HeldOutStdErr}
		fmt.Fprintf(progress, "epoch %d: τ %.3f, train −ELBO %.2f, validation −ELBO %.2f ± %.2f (%d images)\n",
			ep.Epoch+1, ep.Tau, ep.Loss, ep.HeldOut, ep.HeldOutStdErr, val.N)
		b, err := json.Marshal(valByEpoch)
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(valPath, b)
	}
	began := time.Now()
	res, err := vi.FitAmortized(ctx, am, m.Encoder(), fo)
	if err != nil {
		return err
	}
	trainSecs := time.Since(began).Seconds()
	if err := nn.SaveFile(filepath.Join(o.out, "model.plnn"), m.Params()); err != nil {
		return err
	}
	began = time.Now()
	em, err := evalModel(m, o.evalPrec)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "evaluating %d %s images with K = %d in %s…\n", final.N, o.evalSplit, o.iwK, em.Config().Precision)
	ev, err := em.Evaluate(final, o.iwK, o.evalSeed)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "%s: −ELBO %.2f ± %.2f, IW −log p(x) %.2f ± %.2f (K = %d, %d images); paper −log p(x) %.1f\n",
		o.evalSplit, ev.NegELBO, ev.NegELBOSE, ev.NegLogPx, ev.NegLogPxSE, ev.K, ev.Images, paperFor(est))
	s := summary{
		Estimator: est.String(), Config: m.Config(), Anneal: an, Seed: o.seed, EvalSeed: o.evalSeed,
		Epochs: len(res.Epochs), Steps: res.Steps, BatchSize: o.batch, LR: o.lr,
		FinalTemp: an.At(res.Steps - 1), TrainSecs: trainSecs, EvalSplit: o.evalSplit,
		EvalSecs: time.Since(began).Seconds(),
		Binarize: binText,
		CodePath: codePath, Validation: validation,
		Command: append([]string{"go", "run", "./examples/vae"}, os.Args[1:]...), ResumedStep: res.Resumed, ValImages: val.N,
		Paper: paperNumbers{GumbelSoftmax: 106.7, Concrete: 111.5, GumbelSpace: 111.9},
	}
	if em != m {
		s.EvalPrecision = em.Config().Precision.String()
	}
	if o.evalSplit == "test" {
		s.Test = ev
	} else {
		s.ValEval = ev
	}
	if o.aisSteps > 0 {
		if err := annealedEstimates(ctx, &s, m, final, ev, o, progress); err != nil {
			return err
		}
	}
	if done := len(res.Epochs) - res.Resumed/train.StepsPerEpoch(fit.N, o.batch); done > 0 {
		s.SecsPerEp = trainSecs / float64(done)
	}
	for _, e := range res.Epochs {
		s.TrainLoss = append(s.TrainLoss, e.Loss)
		var v, se *float64
		if h, ok := valByEpoch[e.Epoch]; ok && !math.IsNaN(h.NegELBO) {
			v, se = &h.NegELBO, &h.StdErr
		}
		s.ValNegELBO = append(s.ValNegELBO, v)
		s.ValStdErr = append(s.ValStdErr, se)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "summary.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(o.out, aisPartialName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return writeFigures(o.out, m, s, val)
}

// annealedEstimates adds to s the AIS estimate on the final images (or,
// with -ais-sample, on a random sample of them, and the estimate for all
// of them that it settles with iw, their IW estimate) and, with -bdmc, the
// bidirectional check on simulated ones.
//
// AIS keeps the images it has done in -out/ais_partial.json, so that the
// same command goes on from them after an interruption; the file goes
// when summary.json is written.
func annealedEstimates(ctx context.Context, s *summary, m *vae.Model, final *dataset.Images, iw *vae.Eval, o *options, progress io.Writer) error {
	opt := vae.AISOptions{Steps: o.aisSteps, Chains: o.aisChains, Seed: o.evalSeed}
	if o.aisSample > 0 {
		idx, err := vae.SampleIndices(final.N, o.aisSample, o.evalSeed)
		if err != nil {
			return fmt.Errorf("-ais-sample %d of %d images: %w", o.aisSample, final.N, err)
		}
		opt.Subset = idx
	}
	partial := aisPartial{Split: o.evalSplit, Images: final.N, Steps: opt.Steps, Chains: opt.Chains, Seed: opt.Seed,
		Subset: opt.Subset, Network: networkHash(m), Done: []vae.AISImage{}}
	path := filepath.Join(o.out, aisPartialName)
	if err := partial.resume(path); err != nil {
		return err
	}
	if n := len(partial.Done); n > 0 {
		fmt.Fprintf(progress, "AIS: resuming with %d images done (%s)\n", n, path)
	}
	opt.Done = partial.Done
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var began time.Time
	var saveErr error
	prior := partial.Seconds
	opt.OnResult = func(r vae.AISImage) {
		partial.Done = append(partial.Done, r)
		partial.Seconds = prior + time.Since(began).Seconds()
		if err := partial.save(path); err != nil && saveErr == nil {
			saveErr = err
			cancel()
		}
	}
	stage := "AIS"
	opt.OnImage = func(done, total int) {
		fmt.Fprintf(progress, "\r%s (%d steps, %d chains): %d/%d images, %.0f s", stage, opt.Steps, opt.Chains, done, total, time.Since(began).Seconds())
	}
	began = time.Now()
	a, err := m.AISContext(ctx, final, opt)
	if saveErr != nil {
		return saveErr
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(progress, "\nAIS stopped with %d of %d images done; the same command goes on from %s\n", len(partial.Done), final.N, path)
		}
		return err
	}
	s.AIS, s.AISSecs = a, prior+time.Since(began).Seconds()
	fmt.Fprintf(progress, "\n%s: AIS −log p(x) %.2f ± %.2f (%d steps, %d chains, %d images), log-weight sd %.3f\n",
		o.evalSplit, a.NegLogPx, a.NegLogPxSE, a.Steps, a.Chains, a.Images, a.LogWeightSD)
	if o.aisSample > 0 {
		st, err := vae.Settle(iw, a)
		if err != nil {
			return err
		}
		s.Settled = st
		fmt.Fprintf(progress, "%s: settled −log p(x) of all %d images %.2f ± %.2f (IW %.2f minus the IW − AIS gap %.2f on %d random images)\n",
			o.evalSplit, st.Images, st.NegLogPx, st.NegLogPxSE, st.IW, st.Gap, st.Sample)
	}
	if o.bdmc == 0 {
		return nil
	}
	began, stage = time.Now(), "BDMC"
	b, err := m.BDMC(o.bdmc, opt)
	if err != nil {
		return err
	}
	s.BDMC, s.BDMCSecs = b, time.Since(began).Seconds()
	fmt.Fprintf(progress, "\nBDMC on %d simulated images: forward %.3f, reverse %.3f, gap %.3f ± %.3f\n",
		b.Images, b.Forward, b.Reverse, b.Gap, b.GapSE)
	return nil
}

// evalModel returns m, or for -eval-precision other than m's a copy of m
// whose products run in that precision (the same parameter values).
func evalModel(m *vae.Model, prec string) (*vae.Model, error) {
	if prec == "" {
		return m, nil
	}
	p, err := nn.ParsePrecision(prec)
	if err != nil {
		return nil, fmt.Errorf("-eval-precision: %w", err)
	}
	cfg := m.Config()
	if p == cfg.Precision {
		return m, nil
	}
	cfg.Precision = p
	c, err := vae.New(cfg, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, err
	}
	for i, q := range c.Params() {
		copy(q.Value.Data, m.Params()[i].Value.Data)
	}
	return c, nil
}

// aisPartialName is the file in -out that holds an unfinished AIS run.
const aisPartialName = "ais_partial.json"

// aisPartial is what ais_partial.json holds: the settings of an AIS run,
// the network it anneals, and the images it has done.
type aisPartial struct {
	Split   string         `json:"split"`
	Images  int            `json:"images"`
	Steps   int            `json:"steps"`
	Chains  int            `json:"chains"`
	Seed    uint64         `json:"seed"`
	Subset  []int          `json:"subset,omitempty"`
	Network string         `json:"network"` // networkHash of the trained parameters
	Seconds float64        `json:"seconds"` // AIS wall time so far
	Done    []vae.AISImage `json:"done"`
}

// resume reads path, if it is there, into p's Done and Seconds; one
// written for other settings or another network is an error.
func (p *aisPartial) resume(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var got aisPartial
	if err := json.Unmarshal(b, &got); err != nil {
		return fmt.Errorf("%s: %w (delete it to start AIS afresh)", path, err)
	}
	want := *p
	want.Done, want.Seconds = got.Done, got.Seconds
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s belongs to AIS with other settings or another network (split %s, %d images, %d steps, %d chains, seed %d, network %s; this run: %s, %d, %d, %d, %d, %s); use the same flags to go on, or delete it to start AIS afresh",
			path, got.Split, got.Images, got.Steps, got.Chains, got.Seed, got.Network, p.Split, p.Images, p.Steps, p.Chains, p.Seed, p.Network)
	}
	*p = got
	return nil
}

func (p *aisPartial) save(path string) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}

// networkHash identifies a network by its parameters: FNV-1a over their
// names and the bits of their values.
func networkHash(m *vae.Model) string {
	h := fnv.New64a()
	var buf [8]byte
	for _, p := range m.Params() {
		h.Write([]byte(p.Name))
		for _, v := range p.Value.Data {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

func paperFor(e vae.Estimator) float64 {
	return map[vae.Estimator]float64{vae.GumbelSoftmax: 106.7, vae.Concrete: 111.5, vae.GumbelSpace: 111.9}[e]
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// binarizeOnce returns copies of the three image sets with every pixel
// drawn once from Bernoulli(intensity): set k from the source (seed, k+1).
func binarizeOnce(seed uint64, x, y, z *dataset.Images) (a, b, c *dataset.Images, err error) {
	out := make([]*dataset.Images, 3)
	for k, im := range []*dataset.Images{x, y, z} {
		cp := *im
		if cp.Pixels, err = vae.Binarize(nil, im.Pixels, rand.New(rand.NewPCG(seed, uint64(k+1)))); err != nil {
			return nil, nil, nil, fmt.Errorf("-binarize fixed: %w", err)
		}
		out[k] = &cp
	}
	return out[0], out[1], out[2], nil
}
