// Command celegans compares the speed of permlab's Gumbel-Sinkhorn ELBO
// gradient step on the C. elegans neural identification problem with two
// PyTorch implementations of the same step.
//
// The problem is the "hard" setting of the seed paper's Table 7 with 4 worms:
// a synthetic worm of N = 279 neurons, T = 1000 time steps per worm, 25 known
// neurons per worm and position masks of width ν = 0.1. One step draws K = 1
// sample of the four relaxed permutations P_j = S^L((X_j + ε_j)/τ) (τ = 0.5,
// L = 20 Sinkhorn iterations) and of the weights W (mean-field normal on the
// connectome's support), evaluates
//
//	ELBO = Σ_j log p(Y_j | P_j, W) − KL_Gumbel(X) − KL(q(W) ‖ N(0, σ_W² I)),
//
// back-propagates −ELBO and takes an Adam step. With A_j = P_j W P_jᵀ the
// likelihood is that of the linear dynamics y_{t+1} = A_j y_t + e_t,
// e_t ~ N(0, η² I):
//
//	log p(Y_j | P_j, W) = −‖Y_j[1:] − Y_j[:−1] A_jᵀ‖² / (2η²) − (T−1)(N/2) log 2πη²
//	                    = −(tr Syy − 2⟨A_j, Syx⟩ + ⟨A_j Sxx, A_j⟩) / (2η²) − (T−1)(N/2) log 2πη²,
//
// with Sxx = Σ_t y_t y_tᵀ, Syx = Σ_t y_{t+1} y_tᵀ and Syy = Σ_t y_{t+1} y_{t+1}ᵀ
// over the T−1 transitions. permlab evaluates the second form (its cost does
// not depend on T), with products that skip the entries of P_j its candidate
// mask forbids and products with the sparse W. The two PyTorch references
// (step_torch.py) share everything but the likelihood:
//
//   - naive: the first form, per worm, A_j and the residuals over all T
//     steps, as one would write it first;
//   - suffstats: the second form, from statistics computed once from Y as
//     permlab does, with dense products batched over the worms.
//
// The program simulates the problem, writes it to a temporary directory (raw
// little-endian float64 files described by header.json), and starts
// step_torch.py on it in serve mode. It then
//
//   - checks that every side computes the same thing: with the same
//     parameters and the same Gumbel and normal noise (drawn in Go and passed
//     on), each reference's ELBO must agree with permlab's to 1e-6 relative
//     and its gradients with respect to X, μ and ρ to 1e-6 relative to their
//     largest entry;
//   - times the step in rounds after a warm-up: in each round every side
//     (Go and each reference) runs -block steps in a row, the first of them
//     untimed, with a pause after each block, and the side that goes first
//     rotates from round to round, so that load from other processes affects
//     all alike; it prints the medians and the ratio of each reference to
//     Go as a markdown table and says which reference is faster.
//
// All sides use the same number of threads (-threads, default 2: GOMAXPROCS
// for Go, torch.set_num_threads for PyTorch). If python3 or torch is missing
// the program says so and reports the Go timing only. -check stops after the
// cross-check; -variants picks the references.
//
// Run it from the repository root:
//
//	go run ./benchmarks/celegans
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/benchmarks/internal/harness"
	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// config is the benchmark's problem and protocol.
type config struct {
	layout                   string // auto, dense or sparse
	neurons, worms, t, known int
	nu                       float64
	tau, tauPrior            float64
	iters                    int
	sigmaW, wStd0, lr        float64
	seed                     uint64
	threads                  int
	warmup, reps, block      int
	python, script           string
	variants                 []string // PyTorch references, in the order of the output's columns
	keep, spin, checkOnly    bool
	pause                    time.Duration
}

// variants are the PyTorch references step_torch.py implements.
var variants = []string{"naive", "suffstats"}

// parseVariants parses the -variants flag: a comma-separated list of
// distinct references.
func parseVariants(s string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(variants, v) {
			return nil, fmt.Errorf("-variants: unknown reference %q (want a comma-separated list of %s)", v, strings.Join(variants, ", "))
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("-variants: %q given twice", v)
		}
		out = append(out, v)
	}
	return out, nil
}

// Tolerance of the cross-check. The sides evaluate the same formulas in
// float64 but in different orders (sufficient statistics against residuals
// over T, a kernel-based Sinkhorn against repeated logsumexp), so they agree
// to rounding error amplified by the size of the sums (|log-likelihood| is
// about 1e6 here, made of terms of order 1); 1e-6 relative leaves a wide
// margin above that and is far below any modelling difference (a dropped
// constant or a missing KL entry changes the ELBO by more than 1e-5
// relative).
const checkTol = 1e-6

// pause lets the other sides' threads settle before the next timed step:
// OpenBLAS worker threads spin for up to 2^28 cycles (about 0.1 s) after
// their last call, and an active OpenMP pool spins too.
const pause = 150 * time.Millisecond

func main() {
	log.SetFlags(0)
	log.SetPrefix("benchmarks/celegans: ")
	var c config
	flag.IntVar(&c.neurons, "n", celegans.DefaultNeurons, "neurons of the synthetic worm")
	flag.IntVar(&c.worms, "worms", 4, "worms sharing W")
	flag.IntVar(&c.t, "T", celegans.DefaultT, "time steps per worm")
	flag.IntVar(&c.known, "known", 25, "known neurons per worm")
	flag.Float64Var(&c.nu, "nu", 0.1, "candidate width of the position masks (the \"hard\" setting)")
	flag.Float64Var(&c.tau, "tau", 0.5, "Gumbel-Sinkhorn temperature")
	flag.Float64Var(&c.tauPrior, "tauprior", 1, "prior temperature")
	flag.IntVar(&c.iters, "L", 20, "Sinkhorn iterations")
	flag.Float64Var(&c.lr, "lr", 0.1, "Adam learning rate")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the simulation, the initial parameters and the noise")
	flag.IntVar(&c.threads, "threads", 2, "threads on every side (GOMAXPROCS, torch.set_num_threads)")
	flag.IntVar(&c.warmup, "warmup", 3, "untimed steps on each side before timing")
	flag.IntVar(&c.reps, "reps", 12, "timed steps on each side")
	flag.IntVar(&c.block, "block", 4, "steps each side runs in a row before the next side runs; the first of each block is not timed (1: single steps, every one timed)")
	flag.StringVar(&c.python, "python", "/usr/bin/python3", "Python interpreter with torch")
	flag.StringVar(&c.script, "script", filepath.Join("benchmarks", "celegans", "step_torch.py"), "the PyTorch references")
	vs := flag.String("variants", strings.Join(variants, ","), "comma-separated PyTorch references to check and time: naive (residuals over T), suffstats (sufficient statistics)")
	flag.BoolVar(&c.checkOnly, "check", false, "run the cross-check only, no timing")
	flag.BoolVar(&c.keep, "keep", false, "keep the data directory")
	flag.BoolVar(&c.spin, "spin", false, "leave OMP_WAIT_POLICY unset for the references (OpenMP threads spin while idle)")
	masked := flag.Bool("mask", true, "use the position masks (false: every entry of P allowed)")
	flag.StringVar(&c.layout, "layout", "auto", "permlab's guide: auto (as vi.FitModel chooses: sparse when the masks allow at most vi.SparseDensity of the entries), dense or sparse")
	flag.Parse()
	s := celegans.DefaultSettings()
	c.sigmaW, c.wStd0 = s.SigmaW, s.SigmaW/10 // vi.FitModel starts q(W) at a tenth of the prior's spread
	c.pause = pause
	var err error
	if c.variants, err = parseVariants(*vs); err != nil {
		log.Fatal(err)
	}
	if c.layout != "auto" && c.layout != "dense" && c.layout != "sparse" {
		log.Fatalf("-layout must be auto, dense or sparse, got %q", c.layout)
	}
	if c.threads < 1 || c.reps < 1 || c.warmup < 0 || c.block < 1 {
		log.Fatalf("need -threads >= 1, -reps >= 1, -warmup >= 0, -block >= 1")
	}
	runtime.GOMAXPROCS(c.threads)
	if err := run(c, *masked, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(c config, masked bool, w io.Writer) error {
	if len(c.variants) == 0 {
		return errors.New("no PyTorch reference selected")
	}
	setting := fmt.Sprintf("masks ν = %g", c.nu)
	if !masked {
		// No position constraint: every candidate within [0, 1] is
		// allowed; the known neurons stay fixed.
		c.nu = 2
		setting = "no position masks"
	}
	p, ys, err := simulate(c)
	if err != nil {
		return err
	}
	masks := p.Masks
	st, err := newStepper(c, p, masks)
	if err != nil {
		return err
	}
	layout := "dense"
	if st.sparse {
		layout = "sparse"
	}
	fmt.Fprintf(w, "C. elegans ELBO step: %d worms, N = %d, T = %d, %d known neurons per worm, %s (%.1f candidates per row), |support W| = %d, K = 1, τ = %g, L = %d, float64, %d threads, permlab's guide %s (-layout %s)\n\n",
		c.worms, c.neurons, c.t, c.known, setting, candidates(p.N(), masks), len(p.Support()), c.tau, c.iters, c.threads, layout, c.layout)

	dir, err := os.MkdirTemp("", "permlab-celegans-bench-")
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Fprintf(w, "data in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	// The check: the ELBO and its gradient at the initial parameters for
	// noise drawn here, evaluated by every side.
	gumbel, eps := st.checkNoise()
	goCheck, err := st.check()
	if err != nil {
		return err
	}
	if err := writeProblem(dir, c, p, ys, masks, st, gumbel, eps); err != nil {
		return err
	}

	py, why := startPython(c, dir, w)
	if py == nil {
		if c.checkOnly {
			return fmt.Errorf("the cross-check needs PyTorch: %s", why)
		}
		fmt.Fprintf(w, "PyTorch reference not run: %s\n\n", why)
		goTimes, err := harness.Measure(harness.Timed(st.step), c.warmup, c.reps)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| implementation | threads | ms/step (median wall) | CPU ms/step (median) |\n|---|---|---|---|\n")
		fmt.Fprintf(w, "| permlab (Go) | %d | %.1f | %.1f |\n", c.threads, harness.Median(goTimes.Wall), harness.Median(goTimes.CPU))
		hostSpeed(w, c.neurons)
		return nil
	}
	defer py.Close()

	pyChecks := map[string]checkResult{}
	for _, v := range c.variants {
		var r checkResult
		if err := py.Call("check "+v, &r); err != nil {
			return err
		}
		pyChecks[v] = r
	}
	if err := compare(dir, goCheck, c.variants, pyChecks, w); err != nil {
		return err
	}
	if c.checkOnly {
		return nil
	}

	// Rounds of c.block steps per side, c.block-1 of them timed.
	timedPerBlock := max(c.block-1, 1)
	rounds := (c.reps + timedPerBlock - 1) / timedPerBlock
	warmRounds := (c.warmup + c.block - 1) / c.block
	steps := []harness.Step{harness.Timed(st.step)}
	for _, v := range c.variants {
		steps = append(steps, referenceStep(py, v))
	}
	times, err := interleave(steps, warmRounds, rounds, c.block, c.pause)
	if err != nil {
		return err
	}
	report(w, c, setting, warmRounds, times)
	hostSpeed(w, c.neurons)
	return nil
}

// hostSpeed prints the rate of the dense product kernel on this host, in
// the same run: the median of 15 N×N×N products (f64.Gemm) on one thread.
// The ratios are measured in one host state, but the absolute times move
// with the host (a virtual machine's neighbours, its clock); this line
// tells a slower host from slower code when results files are compared.
func hostSpeed(w io.Writer, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, out := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	for i := range a {
		a[i], b[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	packed := f64.Pack(b, n, n)
	times := make([]float64, 15)
	for i := range times {
		start := time.Now()
		f64.Gemm(n, a, packed, out)
		times[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	ms := harness.Median(times)
	fmt.Fprintf(w, "\nThis host's dense kernel, in the same run: one %d×%d×%d product (f64.Gemm, one thread) in %.2f ms, %.1f billion multiply-adds per second (median of %d).\n",
		n, n, n, ms, float64(n)*float64(n)*float64(n)/ms/1e6, len(times))
}

// referenceStep is a Step that has the reference take one step of variant
// v, which answers with {"wall": s, "cpu": s}.
func referenceStep(py *harness.Python, v string) harness.Step {
	return func() (wall, cpu float64, err error) {
		var r struct {
			Wall  float64 `json:"wall"`
			CPU   float64 `json:"cpu"`
			Error string  `json:"error"`
		}
		if err := py.Call("step "+v, &r); err != nil {
			return 0, 0, err
		}
		if r.Error != "" {
			return 0, 0, fmt.Errorf("reference %s: %s", v, r.Error)
		}
		return 1e3 * r.Wall, 1e3 * r.CPU, nil
	}
}

// interleave runs warmup+reps rounds. In round i every side runs block
// consecutive steps, sides i mod k, i+1 mod k, ... in turn for k sides, and
// sleeps for pause (if positive) after each block. Within a block the steps
// run back to back, as in a training loop; the first step of a block is not
// timed when block > 1, since it pays for waking threads (and, on a virtual
// machine, CPUs) that went idle during the pause. It returns, per side, the
// times of the timed steps of the last reps rounds. For two sides it is
// harness.InterleaveBlocks.
func interleave(steps []harness.Step, warmup, reps, block int, pause time.Duration) ([]harness.Times, error) {
	block = max(block, 1)
	k := len(steps)
	times := make([]harness.Times, k)
	for i := 0; i < warmup+reps; i++ {
		for o := 0; o < k; o++ {
			j := (i + o) % k
			for b := 0; b < block; b++ {
				wall, cpu, err := steps[j]()
				if err != nil {
					return times, err
				}
				if i >= warmup && (block == 1 || b > 0) {
					times[j].Wall = append(times[j].Wall, wall)
					times[j].CPU = append(times[j].CPU, cpu)
				}
			}
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}
	return times, nil
}

// report prints the timing table: times[0] is Go, times[1:] the references
// in the order of c.variants.
func report(w io.Writer, c config, setting string, warmRounds int, times []harness.Times) {
	goT, refs := times[0], times[1:]
	if c.block > 1 {
		fmt.Fprintf(w, "\nTimes are medians over %d steps per side, measured interleaved in rounds: in each round every side (Go, then PyTorch %s) runs %d steps in a row, the side that goes first rotating from round to round, with a %v pause after each block; the first step of each block is not timed, so every side is measured as it runs in a training loop. Load from other processes affects all alike. %d warm-up round(s) first. Load average at the end: %s.\n\n",
			len(goT.Wall), strings.Join(c.variants, ", PyTorch "), c.block, c.pause, warmRounds, harness.LoadAvg(3))
	} else {
		fmt.Fprintf(w, "\nTimes are medians over %d steps per side after %d warm-up round(s), measured interleaved (one step of each side per round: Go, then PyTorch %s, the side that goes first rotating from round to round, a %v pause after each) so that load from other processes affects all alike. Load average at the end: %s.\n\n",
			len(goT.Wall), warmRounds, strings.Join(c.variants, ", PyTorch "), c.pause, harness.LoadAvg(3))
	}
	fmt.Fprintf(w, "| setting | threads | Go ms/step |")
	for _, v := range c.variants {
		fmt.Fprintf(w, " PyTorch %s ms/step | ratio (%s/Go) |", v, v)
	}
	fmt.Fprintf(w, "\n|---|---|---|%s\n", strings.Repeat("---|---|", len(refs)))
	rows := []struct {
		name string
		stat func(harness.Times) float64
	}{
		{"wall", func(t harness.Times) float64 { return harness.Median(t.Wall) }},
		{"CPU", func(t harness.Times) float64 { return harness.Median(t.CPU) }},
		{"wall, fastest step", func(t harness.Times) float64 { return slices.Min(t.Wall) }},
	}
	for _, r := range rows {
		g := r.stat(goT)
		fmt.Fprintf(w, "| %s, %s | %d | %.1f |", setting, r.name, c.threads, g)
		for _, t := range refs {
			v := r.stat(t)
			fmt.Fprintf(w, " %.1f | %.2f |", v, v/g)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nRows: wall = median wall-clock time; CPU = median CPU time of the process, summed over its threads; fastest step = the least disturbed step of each side. Slowest steps: Go %.1f ms", slices.Max(goT.Wall))
	for i, t := range refs {
		fmt.Fprintf(w, ", PyTorch %s %.1f ms", c.variants[i], slices.Max(t.Wall))
	}
	fmt.Fprintln(w, ".")
	if len(refs) < 2 {
		return
	}
	// The faster reference, by median wall time and by median CPU time.
	gw, gc := harness.Median(goT.Wall), harness.Median(goT.CPU)
	fastest := func(stat func(harness.Times) float64) int {
		best := 0
		for i, t := range refs {
			if stat(t) < stat(refs[best]) {
				best = i
			}
		}
		return best
	}
	bw, bc := fastest(rows[0].stat), fastest(rows[1].stat)
	fmt.Fprintf(w, "\nFaster PyTorch reference by median wall time: %s (%.1f ms/step), %.2f× Go's; by median CPU time: %s (%.1f ms/step), %.2f× Go's.\n",
		c.variants[bw], harness.Median(refs[bw].Wall), harness.Median(refs[bw].Wall)/gw,
		c.variants[bc], harness.Median(refs[bc].CPU), harness.Median(refs[bc].CPU)/gc)
	if bw != bc {
		fmt.Fprintln(w, "The two measures disagree on which reference is faster; quote both.")
	}
}

// simulate builds the benchmark problem and returns it with each worm's
// T×N recording, row-major, which the reference reads.
func simulate(c config) (*celegans.Problem, [][]float64, error) {
	conn, err := celegans.Synthetic(c.neurons, c.seed)
	if err != nil {
		return nil, nil, err
	}
	sim, err := celegans.Simulate(conn, celegans.SimConfig{Worms: c.worms, T: c.t, KnownCount: c.known}, c.seed)
	if err != nil {
		return nil, nil, err
	}
	masks, err := sim.PositionMasks(c.nu)
	if err != nil {
		return nil, nil, err
	}
	p, err := celegans.FromSimulation(sim, masks)
	if err != nil {
		return nil, nil, err
	}
	var ys [][]float64
	for _, w := range sim.Worms {
		ys = append(ys, w.Y.RawMatrix().Data)
	}
	return p, ys, nil
}

func candidates(n int, masks []*perm.Mask) float64 {
	if masks == nil {
		return float64(n)
	}
	var allowed int
	for _, m := range masks {
		for i := 0; i < n; i++ {
			allowed += len(m.Row(i))
		}
	}
	return float64(allowed) / float64(n*len(masks))
}

// stepper is permlab's side: the guides, the model and the optimizer of
// celegans.Solve's Gumbel-Sinkhorn method.
type stepper struct {
	c      config
	p      *celegans.Problem
	pgX    *ad.Param                   // the permutation guide's logits
	dense  func(x []float64) []float64 // the logits' layout to (B, N, N)
	sparse bool                        // the guide is vi.SparseGumbelSinkhorn
	wg     *vi.Normal
	guides []vi.Guide
	params []*ad.Param
	model  vi.Model
	opt    *optim.Adam
	tape   *ad.Tape
	index  int
}

// newStepper builds the guides with random initial parameters (so that the
// check exercises non-trivial values): X_ij ~ N(0, 0.5²), μ ~ N(0, 0.1²) and
// σ = softplus(ρ) around the default initial standard deviation.
func newStepper(c config, p *celegans.Problem, masks []*perm.Mask) (*stepper, error) {
	cm := celegans.NewModel(p)
	spec, err := models.Check(cm)
	if err != nil {
		return nil, err
	}
	ps := spec.Perms[0]
	sparse := false
	switch c.layout {
	case "sparse":
		sparse = true
	case "auto":
		sparse = masks != nil && ps.N >= vi.SparseMinN && ps.Density() <= vi.SparseDensity
	}
	n, b := p.N(), p.Worms()
	// The initial logits of every entry, as the dense guide holds them;
	// the sparse guide keeps those of the allowed entries.
	rng := rand.New(rand.NewPCG(c.seed, 0x1e17))
	x0 := make([]float64, b*n*n)
	for i := range x0 {
		x0[i] = 0.5 * rng.NormFloat64()
	}
	var pg vi.Guide
	var pgX *ad.Param
	dense := func(x []float64) []float64 { return x }
	if sparse {
		pats, err := ps.Patterns()
		if err != nil {
			return nil, err
		}
		g, err := vi.NewSparseGumbelSinkhorn("P", pats, optim.Constant(c.tau), c.tauPrior, c.iters)
		if err != nil {
			return nil, err
		}
		for j, pat := range pats {
			v, err := pat.Values(mat.NewDense(n, n, x0[j*n*n:(j+1)*n*n]))
			if err != nil {
				return nil, err
			}
			copy(g.X.Value.Data[g.Offset(j):], v)
		}
		dense = func(x []float64) []float64 {
			out := make([]float64, b*n*n)
			for j, pat := range pats {
				d, _ := pat.Dense(x[g.Offset(j):g.Offset(j+1)], 0)
				copy(out[j*n*n:], d.RawMatrix().Data)
			}
			return out
		}
		pg, pgX = g, g.X
	} else {
		g, err := vi.NewGumbelSinkhorn("P", b, n, masks, optim.Constant(c.tau), c.tauPrior, c.iters)
		if err != nil {
			return nil, err
		}
		copy(g.X.Value.Data, x0)
		pg, pgX = g, g.X
	}
	wg, err := vi.NewNormal("W", len(p.Support()), nil, c.wStd0, c.sigmaW)
	if err != nil {
		return nil, err
	}
	for i := range wg.Mu.Value.Data {
		wg.Mu.Value.Data[i] = 0.1 * rng.NormFloat64()
		wg.Rho.Value.Data[i] += 0.2 * rng.NormFloat64()
	}
	params := append(pg.Params(), wg.Params()...)
	opt, err := optim.NewAdam(params)
	if err != nil {
		return nil, err
	}
	model, err := cm.VI()
	if err != nil {
		return nil, err
	}
	return &stepper{c: c, p: p, pgX: pgX, dense: dense, sparse: sparse, wg: wg, guides: []vi.Guide{pg, wg}, params: params,
		model: model, opt: opt, tape: ad.NewTape()}, nil
}

// step is one ELBO gradient step, as vi.Fit takes it.
func (s *stepper) step() error {
	s.tape.Reset()
	elbo, _, _, err := vi.ELBO(s.tape, s.model, s.guides, vi.Step{Index: s.index, K: 1, Rng: vi.StepRand(s.c.seed, s.index)})
	if err != nil {
		return err
	}
	if err := s.tape.Backward(ad.Neg(elbo)); err != nil {
		return err
	}
	s.index++
	return s.opt.Step(s.c.lr)
}

// checkRand is the random source of the check evaluation.
func (s *stepper) checkRand() *rand.Rand { return rand.New(rand.NewPCG(s.c.seed, 0xc4ec)) }

// checkNoise draws what the guides draw from checkRand: the Gumbel-Sinkhorn
// guide draws its (K, B, N, N) noise first, in row-major order and only at
// entries its masks allow (with no masks, at every entry), then the normal
// guide draws its (K, D) standard normals, in order from the same source.
// The check fails if this ever stops matching the guides.
func (s *stepper) checkNoise() (gumbel, eps []float64) {
	rng := s.checkRand()
	n, b := s.p.N(), s.p.Worms()
	gumbel = make([]float64, b*n*n)
	{
		for j := 0; j < b; j++ {
			for i := 0; i < n; i++ {
				for c := 0; c < n; c++ {
					if s.p.Masks[j].Allowed(i, c) {
						gumbel[(j*n+i)*n+c] = dist.StandardGumbel(rng)
					}
				}
			}
		}
	}
	eps = make([]float64, len(s.p.Support()))
	for i := range eps {
		eps[i] = rng.NormFloat64()
	}
	return gumbel, eps
}

// checkResult is the ELBO and its parts at the initial parameters, and
// the gradient of the ELBO.
type checkResult struct {
	ELBO   float64 `json:"elbo"`
	LogLik float64 `json:"loglik"`
	KLP    float64 `json:"kl_p"`
	KLW    float64 `json:"kl_w"`
	Error  string  `json:"error"`
	grads  map[string][]float64
}

// check evaluates the ELBO and its gradient without changing the
// parameters.
func (s *stepper) check() (checkResult, error) {
	t := ad.NewTape()
	elbo, ll, div, err := vi.ELBO(t, s.model, s.guides, vi.Step{Index: 0, K: 1, Rng: s.checkRand()})
	if err != nil {
		return checkResult{}, err
	}
	// The KL of W alone, to report both divergences as the reference does.
	klw := 0.0
	for i, r := range s.wg.Rho.Value.Data {
		sd := softplus(r)
		mu := s.wg.Mu.Value.Data[i]
		v := s.c.sigmaW * s.c.sigmaW
		klw += math.Log(s.c.sigmaW/sd) + (sd*sd+mu*mu)/(2*v) - 0.5
	}
	res := checkResult{ELBO: elbo.Item(), LogLik: ll.Item(), KLP: div.Item() - klw, KLW: klw, grads: map[string][]float64{}}
	if err := t.Backward(ad.Neg(elbo)); err != nil {
		return checkResult{}, err
	}
	for name, prm := range map[string]*ad.Param{"X": s.pgX, "mu": s.wg.Mu, "rho": s.wg.Rho} {
		g := make([]float64, len(prm.Grad.Data))
		for i, v := range prm.Grad.Data {
			g[i] = -v // Backward saw −ELBO
		}
		if name == "X" {
			g = s.dense(g)
		}
		res.grads[name] = g
	}
	for _, prm := range s.params {
		prm.ZeroGrad()
	}
	return res, nil
}

func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// compare reports the cross-check of each reference in variants (results
// pys, gradients in dir/grad_VARIANT_{X,mu,rho}.f64) against permlab's g,
// and returns an error if any fails.
func compare(dir string, g checkResult, variants []string, pys map[string]checkResult, w io.Writer) error {
	for _, v := range variants {
		if e := pys[v].Error; e != "" {
			return fmt.Errorf("PyTorch %s check: %s", v, e)
		}
	}
	fmt.Fprintf(w, "Cross-check at the initial parameters with the same noise (tolerance %g relative):\n\n", checkTol)
	fmt.Fprintf(w, "| quantity | permlab |")
	for _, v := range variants {
		fmt.Fprintf(w, " PyTorch %s | relative difference |", v)
	}
	fmt.Fprintf(w, "\n|---|---|%s\n", strings.Repeat("---|---|", len(variants)))
	var failed []string
	for _, q := range []struct {
		name string
		get  func(checkResult) float64
	}{
		{"ELBO", func(r checkResult) float64 { return r.ELBO }},
		{"log-likelihood", func(r checkResult) float64 { return r.LogLik }},
		{"KL (Gumbel, P)", func(r checkResult) float64 { return r.KLP }},
		{"KL (normal, W)", func(r checkResult) float64 { return r.KLW }},
	} {
		gv := q.get(g)
		fmt.Fprintf(w, "| %s | %.10g |", q.name, gv)
		for _, v := range variants {
			pv := q.get(pys[v])
			rel := math.Abs(gv-pv) / math.Max(math.Abs(pv), math.SmallestNonzeroFloat64)
			fmt.Fprintf(w, " %.10g | %.2e |", pv, rel)
			if q.name == "ELBO" && !(rel <= checkTol) {
				failed = append(failed, v+" ELBO")
			}
		}
		fmt.Fprintln(w)
	}
	for _, name := range []string{"X", "mu", "rho"} {
		gg := g.grads[name]
		fmt.Fprintf(w, "| ∂ELBO/∂%s (max abs diff / max abs) | |", name)
		for _, v := range variants {
			pg, err := harness.ReadF64(filepath.Join(dir, "grad_"+v+"_"+name+".f64"), len(gg))
			if err != nil {
				return fmt.Errorf("gradient of %s from PyTorch %s: %w", name, v, err)
			}
			var diff, scale float64
			for i := range gg {
				diff = math.Max(diff, math.Abs(gg[i]-pg[i]))
				scale = math.Max(scale, math.Abs(pg[i]))
			}
			rel := diff / math.Max(scale, math.SmallestNonzeroFloat64)
			fmt.Fprintf(w, " | %.2e |", rel)
			if !(rel <= checkTol) {
				failed = append(failed, v+" ∂ELBO/∂"+name)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	if failed != nil {
		return fmt.Errorf("the cross-check failed (%s): the implementations do not compute the same step, timings would not be comparable", strings.Join(failed, ", "))
	}
	fmt.Fprintf(w, "Cross-check passed: permlab and PyTorch %s compute the same ELBO and gradient.\n", strings.Join(variants, " and PyTorch "))
	return nil
}

// writeProblem writes the data, the masks, the support of W, the initial
// parameters and the check noise as raw little-endian float64 files with
// header.json describing them.
func writeProblem(dir string, c config, p *celegans.Problem, ys [][]float64, masks []*perm.Mask, st *stepper, gumbel, eps []float64) error {
	n, b := p.N(), p.Worms()
	type array struct {
		File  string `json:"file"`
		Shape []int  `json:"shape"`
	}
	header := struct {
		Neurons  int              `json:"neurons"`
		Worms    int              `json:"worms"`
		T        int              `json:"T"`
		Tau      float64          `json:"tau"`
		TauPrior float64          `json:"tau_prior"`
		Iters    int              `json:"iters"`
		NoiseVar float64          `json:"noise_var"`
		SigmaW   float64          `json:"sigma_w"`
		LR       float64          `json:"lr"`
		Threads  int              `json:"threads"`
		Seed     uint64           `json:"seed"`
		Arrays   map[string]array `json:"arrays"`
	}{n, b, c.t, c.tau, c.tauPrior, c.iters, p.NoiseVar, c.sigmaW, c.lr, c.threads, c.seed, map[string]array{}}
	put := func(name string, data []float64, shape ...int) error {
		header.Arrays[name] = array{name + ".f64", shape}
		return harness.WriteF64(filepath.Join(dir, name+".f64"), data)
	}
	var y []float64
	for _, w := range ys {
		y = append(y, w...)
	}
	if err := put("Y", y, b, c.t, n); err != nil {
		return err
	}
	if masks != nil {
		m := make([]float64, b*n*n)
		for j, mk := range masks {
			for i := 0; i < n; i++ {
				for _, col := range mk.Row(i) {
					m[(j*n+i)*n+col] = 1
				}
			}
		}
		if err := put("mask", m, b, n, n); err != nil {
			return err
		}
	}
	sup := make([]float64, 0, 2*len(p.Support()))
	for _, rc := range p.Support() {
		sup = append(sup, float64(rc[0]), float64(rc[1]))
	}
	e := len(p.Support())
	for _, a := range []struct {
		name  string
		data  []float64
		shape []int
	}{
		{"support", sup, []int{e, 2}},
		{"X0", st.dense(st.pgX.Value.Data), []int{b, n, n}},
		{"mu0", st.wg.Mu.Value.Data, []int{e}},
		{"rho0", st.wg.Rho.Value.Data, []int{e}},
		{"check_gumbel", gumbel, []int{b, n, n}},
		{"check_eps", eps, []int{e}},
	} {
		if err := put(a.name, a.data, a.shape...); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(header, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "header.json"), js, 0o644)
}

// startPython starts the references, or returns nil and the reason why it
// cannot run.
func startPython(c config, dir string, w io.Writer) (*harness.Python, string) {
	if err := harness.CheckPython(c.python, c.script); err != nil {
		return nil, err.Error()
	}
	if out, err := exec.Command(c.python, "-c", "import torch").CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("%s cannot import torch (%v): %s", c.python, err, strings.TrimSpace(string(out)))
	}
	py, err := harness.StartPython(c.python, c.script, dir, pythonEnv(c))
	if err != nil {
		return nil, fmt.Sprintf("the reference did not start: %v", err)
	}
	fmt.Fprintf(w, "PyTorch %s with %d threads (%s; %s)\n%s\n\n", py.Torch, py.Threads, c.python, strings.Join(py.Env, " "), py.BLASNote())
	return py, ""
}

// pythonEnv is the environment the references run in unless the caller
// sets these variables. The Debian build of torch calls a pthreads OpenBLAS
// that starts one thread per core whatever torch.set_num_threads says, so
// OPENBLAS_NUM_THREADS pins it to the thread count being compared. Idle
// OpenMP threads spin by default, which on a machine shared with other
// CPU-heavy processes slows the reference by up to 10x and more; passive
// waiting measures the implementation rather than the scheduler (-spin
// keeps the library default).
func pythonEnv(c config) []string {
	env := []string{
		fmt.Sprintf("OMP_NUM_THREADS=%d", c.threads),
		fmt.Sprintf("OPENBLAS_NUM_THREADS=%d", c.threads),
	}
	if !c.spin {
		env = append(env, "OMP_WAIT_POLICY=PASSIVE")
	}
	return env
}
