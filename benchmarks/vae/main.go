// Command vae compares the speed of one training step of permlab's
// categorical VAE (models/vae) with the same step in PyTorch: forward pass,
// backward pass and one Adam update, in float64, with the same number of
// threads on each side (GOMAXPROCS; torch.set_num_threads,
// OPENBLAS_NUM_THREADS and OMP_NUM_THREADS; OMP_WAIT_POLICY=PASSIVE, see
// startPython).
//
// The network is models/vae's default, that of Jang et al. (2016): encoder
// 784-512-256-200 and decoder 200-256-512-784 with ReLU, 20 latents of 10
// classes, Bernoulli likelihood, Adam with learning rate 1e-3, batch 100.
// Each of the three stochastic nodes (-estimator: gumbel-softmax, concrete,
// gumbel-space) is a case; they share the decoder's input y = softmax((l +
// g)/τ) and differ in the KL term. The Go step is vae.Model.LossNoise on one
// ad.Tape, Backward and optim.Adam; the PyTorch side (vae_torch.py) writes the
// same loss from the formulas of the models/vae documentation as tensor
// operations, differentiates it by autograd and updates with
// torch.optim.Adam.
//
// Both sides start from the same weights (vae.New from -seed, biases set to
// small random values so that the check covers their gradients) and take
// every step on the same batch of binary images with the same Gumbel noise.
// Without -mnist the batch is synthetic, pixels Bernoulli(1/2) from the
// seed: the time of a step does not depend on the pixel values. With
// -mnist DIR it is the first -batch images of DIR/t10k-images-idx3-ubyte.gz,
// binarized from the seed.
//
// The program writes the problem to a temporary directory as raw float64
// files, starts vae_torch.py on it, and for each estimator
//
//   - checks that one step from the initial weights gives the same loss (to
//     1e-10 relative), the same gradients and the same weights after the
//     Adam update (to 1e-10 relative to each parameter's largest entry), and
//     stops with an error otherwise;
//   - times the step in interleaved blocks (harness.InterleaveBlocks: a
//     block of -steps Go steps, a block of -steps PyTorch steps, alternating
//     which goes first, the first step of each block untimed), and prints
//     the median wall and CPU times per step, their ratio, and the achieved
//     GFLOP/s against the machine's peak.
//
// Run it from the repository root:
//
//	go run ./benchmarks/vae -threads 1
//	go run ./benchmarks/vae -threads 2
//	go run ./benchmarks/vae -threads 1 -precision float32
//
// With -precision float32, permlab's dense layers multiply in float32
// (vae.Config.Precision, ad.MatMul32) and PyTorch runs the whole step in
// float32 (parameters, activations, Adam): each library's float32 training
// as a user would run it. The check then allows float32 rounding (see
// tolerance32).
//
// Without python3 or torch the program says so and times Go alone.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/permlab/permlab/benchmarks/internal/harness"
	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
)

// config is the benchmark's protocol.
type config struct {
	estimators            []vae.Estimator
	threads               int
	batch                 int
	tau, tauPrior         float64
	warmup, rounds, steps int
	seed                  uint64
	mnist                 string
	python, script        string
	precision             nn.Precision
}

func main() {
	var c config
	var ests string
	flag.StringVar(&ests, "estimator", "all", "comma-separated estimators (gumbel-softmax, concrete, gumbel-space) or all")
	flag.IntVar(&c.threads, "threads", 1, "threads on each side (GOMAXPROCS, torch.set_num_threads)")
	flag.IntVar(&c.batch, "batch", 100, "images per step")
	flag.Float64Var(&c.tau, "tau", 1, "temperature τ (the schedule's start; the floor is 0.5)")
	flag.Float64Var(&c.tauPrior, "prior-tau", 0, "prior temperature for concrete and gumbel-space (0: τ)")
	flag.IntVar(&c.warmup, "warmup", 1, "untimed rounds")
	flag.IntVar(&c.rounds, "rounds", 10, "timed rounds")
	// Blocks of 10, not 4: after the other side's block the Go side takes
	// a few steps to reach the speed it keeps in a training loop, and with
	// blocks of 4 its medians jumped from run to run while PyTorch's did
	// not (results/threads2.md holds both settings from one session).
	flag.IntVar(&c.steps, "steps", 10, "steps per block, run back to back as in a training loop (the first of each block is not timed)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of weights, images and noise")
	flag.StringVar(&c.mnist, "mnist", "", "folder with t10k-images-idx3-ubyte.gz (default: synthetic binary images)")
	flag.StringVar(&c.python, "python", "/usr/bin/python3", "Python interpreter with torch")
	flag.StringVar(&c.script, "script", filepath.Join("benchmarks", "vae", "vae_torch.py"), "reference script")
	prec := flag.String("precision", "float64", "float64, or float32: permlab's dense products in float32 (vae.Config.Precision) against PyTorch entirely in float32")
	flag.Parse()
	log.SetFlags(0)
	var err error
	if c.precision, err = nn.ParsePrecision(*prec); err != nil {
		log.Fatal("vae: -precision: ", err)
	}
	if c.estimators, err = parseEstimators(ests); err != nil {
		log.Fatal("vae: ", err)
	}
	if err := run(c, os.Stdout); err != nil {
		log.Fatal("vae: ", err)
	}
}

// parseEstimators parses the -estimator flag.
func parseEstimators(s string) ([]vae.Estimator, error) {
	if s == "all" {
		return []vae.Estimator{vae.GumbelSoftmax, vae.Concrete, vae.GumbelSpace}, nil
	}
	var out []vae.Estimator
	for _, name := range strings.Split(s, ",") {
		e, err := vae.ParseEstimator(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// result is one estimator's measurement.
type result struct {
	p         *problem
	goT       harness.Times
	pyT       *harness.Times
	agreement string
}

func run(c config, w io.Writer) error {
	if c.threads < 1 || c.rounds < 1 || c.warmup < 0 || c.steps < 1 || c.batch < 1 || len(c.estimators) == 0 || c.tauPrior < 0 {
		return fmt.Errorf("bad configuration %+v", c)
	}
	prev := runtime.GOMAXPROCS(c.threads)
	defer runtime.GOMAXPROCS(prev)
	problems := make([]*problem, len(c.estimators))
	for i, e := range c.estimators {
		p, err := newProblem(e, c.batch, c.tau, c.tauPrior, c.mnist, c.seed, c.precision)
		if err != nil {
			return err
		}
		problems[i] = p
	}
	fmt.Fprintf(w, "One training step (forward, backward, Adam) of the categorical VAE, batch %d, %s, %d thread(s) on each side\n\n", c.batch, precisionNote(c.precision), c.threads)
	dir, err := os.MkdirTemp("", "permlab-vae-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Every problem starts from the same weights, images and noise.
	if err := writeProblem(dir, problems[0], c.estimators, c.threads); err != nil {
		return err
	}
	py, why := startPython(c, dir)
	if py == nil {
		fmt.Fprintf(w, "PyTorch reference not run: %s\n", why)
	} else {
		defer py.Close()
		fmt.Fprintf(w, "PyTorch %s, %d thread(s), %s\n%s\n", py.Torch, py.Threads, strings.Join(py.Env, " "), py.BLASNote())
	}
	results := make([]result, len(problems))
	for i, p := range problems {
		if results[i], err = measure(c, p, py, dir, w); err != nil {
			return fmt.Errorf("%v: %w", p.est, err)
		}
	}
	printTable(c, results, w)
	return nil
}

// measure checks one estimator's step against PyTorch, if py is not nil,
// and times it.
func measure(c config, p *problem, py *harness.Python, dir string, w io.Writer) (result, error) {
	r := result{p: p}
	goStep := harness.Timed(func() error {
		_, err := p.trainStep()
		return err
	})
	if py == nil {
		var err error
		r.goT, err = harness.Measure(goStep, c.warmup*c.steps, c.rounds*c.steps)
		return r, err
	}
	var ok struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := py.Call("reset "+p.est.String(), &ok); err != nil {
		return r, err
	}
	if !ok.OK {
		return r, fmt.Errorf("reference: reset: %s", ok.Error)
	}
	var err error
	if r.agreement, err = compare(py, dir, p, c.precision); err != nil {
		return r, err
	}
	fmt.Fprintf(w, "%v: %s\n", p.est, r.agreement)
	goT, pyT, err := harness.InterleaveBlocks(goStep, py.Step, c.warmup, c.rounds, c.steps, 0)
	if err != nil {
		return r, err
	}
	r.goT, r.pyT = goT, &pyT
	return r, nil
}

// startPython starts the reference, or returns nil and the reason why not.
func startPython(c config, dir string) (*harness.Python, string) {
	return harness.StartTorch(c.python, c.script, dir, c.threads)
}

// tolerance of the check: relative to the loss, and to each parameter's
// largest gradient or weight. Both sides compute the same float64
// expressions in different orders (blocked products, fused softmax), so
// they differ by rounding: a few units of 1e-16 per operation, amplified by
// at most the depth of the network.
const tolerance = 1e-10

// tolerance32 is the check's tolerance with -precision float32, for the
// loss and the gradients: PyTorch then rounds every operation to float32
// (2⁻²⁴ ≈ 6e-8), and permlab the products; sums of up to 784 terms through
// six layers stay well below 1e-4. The weights after Adam are not checked
// in float32: Adam's first step moves every weight by about the learning
// rate times the sign of its gradient, so a gradient within rounding of
// zero moves its weight by ±1e-3 on either side.
const tolerance32 = 1e-4

// precisionNote says what each side computes in precision p.
func precisionNote(p nn.Precision) string {
	if p == nn.Float32 {
		return "float32 (permlab: the dense layers' products in float32, everything else float64; PyTorch: everything float32)"
	}
	return "float64"
}

// compare runs one step from the initial weights on both sides and compares
// the loss, the gradients and the weights after the Adam update. It leaves
// both sides one step further.
func compare(py *harness.Python, dir string, p *problem, prec nn.Precision) (string, error) {
	params := p.model.Params()
	loss, err := p.lossGrad()
	if err != nil {
		return "", err
	}
	var grads, after []float64
	for _, q := range params {
		grads = append(grads, q.Grad.Data...)
	}
	if err := p.opt.Step(p.lr); err != nil {
		return "", err
	}
	for _, q := range params {
		after = append(after, q.Value.Data...)
	}
	var res struct {
		Loss  float64 `json:"loss"`
		Error string  `json:"error"`
	}
	if err := py.Call("check", &res); err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New("reference: " + res.Error)
	}
	tg, err := harness.ReadF64(filepath.Join(dir, "grad_torch.f64"), len(grads))
	if err != nil {
		return "", err
	}
	ta, err := harness.ReadF64(filepath.Join(dir, "after_torch.f64"), len(after))
	if err != nil {
		return "", err
	}
	dl := math.Abs(loss-res.Loss) / math.Abs(res.Loss)
	dg := harness.MaxRelDiff(params, grads, tg)
	da := harness.MaxRelDiff(params, after, ta)
	line := fmt.Sprintf("agreement: loss %.1e, gradients %.1e, weights after Adam %.1e (relative; loss %.6g)", dl, dg, da, loss)
	ok := dl <= tolerance && dg <= tolerance && da <= tolerance
	if prec == nn.Float32 {
		line += " (float32: loss and gradients checked to 1e-4, weights after Adam not checked)"
		ok = dl <= tolerance32 && dg <= tolerance32
	}
	if !ok {
		return "", fmt.Errorf("Go and PyTorch disagree (loss %v against %v): %s", loss, res.Loss, line)
	}
	return line, nil
}

// printTable prints the medians, ratios and rates of the results.
func printTable(c config, results []result, w io.Writer) {
	peak, clock, lanes := harness.PeakGFLOPS(c.threads)
	if c.precision == nn.Float32 {
		// Twice as many float32 lanes per FMA as float64 ones.
		peak, lanes = 2*peak, 2*lanes
	}
	fmt.Fprintf(w, "\n| estimator | GFLOP/step | PyTorch wall (ms) | permlab wall (ms) | ratio wall | ratio CPU | permlab GFLOP/s (%% of peak) | PyTorch GFLOP/s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		gw, gc := harness.Median(r.goT.Wall), harness.Median(r.goT.CPU)
		gf := r.p.flops / 1e9
		goRate := gf / (gw / 1e3)
		pw, ratioW, ratioC, pyRate := "–", "–", "–", "–"
		if r.pyT != nil {
			pwv, pcv := harness.Median(r.pyT.Wall), harness.Median(r.pyT.CPU)
			pw = fmt.Sprintf("%.2f", pwv)
			ratioW = fmt.Sprintf("%.2f×", pwv/gw)
			ratioC = fmt.Sprintf("%.2f×", pcv/gc)
			pyRate = fmt.Sprintf("%.1f", gf/(pwv/1e3))
		}
		ofPeak := "–"
		if peak > 0 {
			ofPeak = fmt.Sprintf("%.0f%%", 100*goRate/peak)
		}
		fmt.Fprintf(w, "| %v | %.3f | %s | %.2f | %s | %s | %.1f (%s) | %s |\n",
			r.p.est, gf, pw, gw, ratioW, ratioC, goRate, ofPeak, pyRate)
	}
	p := results[0].p
	fmt.Fprintf(w, "\nMedians of %d timed steps per side (%d rounds of blocks of %d, the first step of each block untimed) after %d warm-up round(s); load average %s on %d CPUs.\n",
		c.rounds*max(c.steps-1, 1), c.rounds, c.steps, c.warmup, harness.LoadAvg(1), runtime.NumCPU())
	fmt.Fprintf(w, "Ratios are PyTorch time / permlab time (above 1: permlab faster).\n")
	fmt.Fprintf(w, "Peak %.1f GFLOP/s = %d core(s) × %d flops/cycle (two %d-wide FMA units) × %.2f GHz (/proc/cpuinfo); the core may run faster than that clock.\n", peak, c.threads, 4*lanes, lanes, clock)
	fmt.Fprintln(w, flopNote)
	fmt.Fprintf(w, "Network %d-%s-%d and back, %d latents × %d classes, τ = %g, prior τ = %g, Adam lr %g; every step on the same batch of %s with the same Gumbel noise (seed %d).\n",
		p.cfg.Input, joinInts(p.cfg.Hidden), p.cfg.Latents*p.cfg.Classes, p.cfg.Latents, p.cfg.Classes, p.tau, p.tauPrior, p.lr, p.source, c.seed)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, "-")
}
