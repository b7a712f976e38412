// Command lap compares the speed of relax.Matching, permlab's exact linear
// assignment solver, with SciPy's scipy.optimize.linear_sum_assignment on
// the same seeded uniform random matrices.
//
// For each size n it draws an n×n matrix with entries uniform on [0, 1)
// from rand.NewPCG(seed, n) (the matrices of the relax benchmarks), writes
// it to a temporary file, and times both solvers on it: relax.Matching in
// this process (GOMAXPROCS set by -threads) and SciPy (maximize=True) by
// running lap_scipy.py under -python. Timing alternates between the two in
// -rounds rounds of -reps runs each (after a warm-up), so that other load
// on the machine affects both alike; it reports the median over all runs
// and the ratio SciPy time / Go time (above 1 means Go is faster), plus the
// same ratio for the fastest run of each. The optimal objectives must agree
// to within 1e-9 relative. Without python3, numpy or SciPy it reports Go
// times only.
//
// Distance from the machine's limit: an exact solver must read every entry
// of x at least once, so the harness also times one read of the n×n matrix
// (a row-major sum with four accumulators, interleaved with the solver's
// runs) and prints the solver's median time in units of that read.
// relax.Matching reads x once, without copying it, selecting on the way
// about 12 (n < 512) or 16 candidates per row under a threshold; solves
// the assignment on those candidates by shortest augmenting paths with a
// heap (about 2,200 edge relaxations per search at n = 1000, where a dense
// search would relax some 130 rows × 1000 columns); checks the prices
// against the other entries through a per-row bound, reading in full only
// the rows where the bound fails (a few); and would run dense augmenting
// paths for rows failing the check (none on these matrices). See
// benchmarks/README.md for the measured multiples of one read.
//
// Usage, from the repository root:
//
//	go run ./benchmarks/lap [-sizes 100,278,1000] [-reps 5] [-rounds 3] [-threads 1]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/benchmarks/internal/harness"
	"github.com/permlab/permlab/relax"
)

// problem is one benchmark matrix and the timings collected for it.
type problem struct {
	n        int
	x        *mat.Dense
	path     string
	goTimes  []float64 // seconds
	pyTimes  []float64 // seconds
	rdTimes  []float64 // seconds, one read of x
	goObj    float64
	pyObj    float64
	pyObjSet bool
}

type pyResult struct {
	N         int       `json:"n"`
	MedianS   float64   `json:"median_s"`
	MinS      float64   `json:"min_s"`
	TimesS    []float64 `json:"times_s"`
	Objective float64   `json:"objective"`
}

type pyOutput struct {
	Error   string     `json:"error"`
	SciPy   string     `json:"scipy"`
	NumPy   string     `json:"numpy"`
	Python  string     `json:"python"`
	Results []pyResult `json:"results"`
}

func main() {
	sizes := flag.String("sizes", "100,278,1000", "comma-separated matrix sizes")
	reps := flag.Int("reps", 5, "timed runs per size and round")
	rounds := flag.Int("rounds", 3, "rounds alternating Go and SciPy timings")
	threads := flag.Int("threads", 1, "GOMAXPROCS for the Go solver")
	seed := flag.Uint64("seed", 1, "random seed for the matrices")
	python := flag.String("python", "/usr/bin/python3", "Python interpreter with numpy and scipy")
	script := flag.String("script", filepath.Join("benchmarks", "lap", "lap_scipy.py"), "path to lap_scipy.py")
	flag.Parse()

	if err := run(*sizes, *reps, *rounds, *threads, *seed, *python, *script); err != nil {
		fmt.Fprintln(os.Stderr, "lap:", err)
		os.Exit(1)
	}
}

func run(sizesFlag string, reps, rounds, threads int, seed uint64, python, script string) error {
	if reps < 1 || rounds < 1 || threads < 1 {
		return fmt.Errorf("-reps, -rounds and -threads must be >= 1 (got %d, %d, %d)", reps, rounds, threads)
	}
	var probs []*problem
	for _, s := range strings.Split(sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad size %q in -sizes", s)
		}
		probs = append(probs, &problem{n: n, x: uniformMatrix(n, seed)})
	}
	runtime.GOMAXPROCS(threads)

	dir, err := os.MkdirTemp("", "permlab-lap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, p := range probs {
		p.path = filepath.Join(dir, fmt.Sprintf("x%d.f64", p.n))
		if err := writeMatrix(p.path, p.x); err != nil {
			return err
		}
	}

	var py *pyOutput
	var pyErr error
	for round := 0; round < rounds; round++ {
		for _, p := range probs {
			if err := timeGo(p, reps); err != nil {
				return fmt.Errorf("n=%d: %w", p.n, err)
			}
			if err := timeRead(p, reps); err != nil {
				return fmt.Errorf("n=%d: %w", p.n, err)
			}
		}
		if pyErr != nil {
			continue
		}
		if py, pyErr = runSciPy(python, script, reps, probs); pyErr == nil {
			for i, p := range probs {
				p.pyTimes = append(p.pyTimes, py.Results[i].TimesS...)
				p.pyObj, p.pyObjSet = py.Results[i].Objective, true
			}
		}
	}

	fmt.Printf("Linear assignment (maximise), uniform [0,1) matrices, seed %d, %d rounds × %d runs.\n", seed, rounds, reps)
	fmt.Printf("Go %s, GOMAXPROCS=%d, %s/%s, %d CPUs, load average %s.\n", runtime.Version(), threads, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), harness.LoadAvg(3))
	if pyErr != nil {
		fmt.Printf("SciPy comparison skipped: %v\n\n", pyErr)
		fmt.Println("| n | Go relax.Matching, median (ms) | best (ms) | one read of x (ms) | Go / read |")
		fmt.Println("|---:|---:|---:|---:|---:|")
		for _, p := range probs {
			goMed, rdMed := harness.Median(p.goTimes), harness.Median(p.rdTimes)
			fmt.Printf("| %d | %.3f | %.3f | %.3f | %.1f |\n", p.n, 1e3*goMed, 1e3*slices.Min(p.goTimes), 1e3*rdMed, goMed/rdMed)
		}
		return nil
	}
	fmt.Printf("SciPy %s (numpy %s, Python %s).\n\n", py.SciPy, py.NumPy, py.Python)
	fmt.Println("| n | Go relax.Matching (ms) | SciPy linear_sum_assignment (ms) | ratio SciPy/Go | ratio of best runs | objectives agree | one read of x (ms) | Go / read |")
	fmt.Println("|---:|---:|---:|---:|---:|:---:|---:|---:|")
	var mismatch error
	for _, p := range probs {
		goMed, pyMed := harness.Median(p.goTimes), harness.Median(p.pyTimes)
		agree := p.pyObjSet && math.Abs(p.pyObj-p.goObj) <= 1e-9*math.Max(1, math.Abs(p.goObj))
		if !agree && mismatch == nil {
			mismatch = fmt.Errorf("n=%d: objective %v (Go) != %v (SciPy)", p.n, p.goObj, p.pyObj)
		}
		rdMed := harness.Median(p.rdTimes)
		fmt.Printf("| %d | %.3f | %.3f | %.2f | %.2f | %s | %.3f | %.1f |\n", p.n, 1e3*goMed, 1e3*pyMed,
			pyMed/goMed, slices.Min(p.pyTimes)/slices.Min(p.goTimes), yesNo(agree), 1e3*rdMed, goMed/rdMed)
	}
	return mismatch
}

// uniformMatrix returns the n×n benchmark matrix: entries uniform on [0, 1)
// drawn row-major from rand.NewPCG(seed, n), the construction used by the
// relax matching benchmarks.
func uniformMatrix(n int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	data := make([]float64, n*n)
	for i := range data {
		data[i] = rng.Float64()
	}
	return mat.NewDense(n, n, data)
}

// timeGo appends reps timings of relax.Matching on p.x after a warm-up.
func timeGo(p *problem, reps int) error {
	if _, err := relax.Matching(p.x); err != nil {
		return err
	}
	for range reps {
		runtime.GC() // keep collections of earlier garbage out of the timing
		t0 := time.Now()
		perm, err := relax.Matching(p.x)
		el := time.Since(t0)
		if err != nil {
			return err
		}
		p.goTimes = append(p.goTimes, el.Seconds())
		if p.goObj, err = relax.Objective(p.x, perm); err != nil {
			return err
		}
	}
	return nil
}

// timeRead appends reps timings of one read of p.x (readSum), the least
// work an exact solver must do. Every read must give the same sum, which
// also keeps the compiler from dropping it.
func timeRead(p *problem, reps int) error {
	data := p.x.RawMatrix().Data
	want := readSum(data)
	for range reps {
		t0 := time.Now()
		got := readSum(data)
		el := time.Since(t0)
		if got != want {
			return fmt.Errorf("reading x twice gave sums %v and %v", want, got)
		}
		p.rdTimes = append(p.rdTimes, el.Seconds())
	}
	return nil
}

// readSum returns the sum of data with four accumulators, so that the loop
// runs at the speed of the loads rather than of the dependent additions.
func readSum(data []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(data); i += 4 {
		d := data[i : i+4 : i+4]
		s0 += d[0]
		s1 += d[1]
		s2 += d[2]
		s3 += d[3]
	}
	for ; i < len(data); i++ {
		s0 += data[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// writeMatrix writes x to path, row-major, as raw little-endian float64.
func writeMatrix(path string, x *mat.Dense) error {
	r, c := x.Dims()
	data := make([]float64, 0, r*c)
	for i := range r {
		data = append(data, x.RawRowView(i)...)
	}
	return harness.WriteF64(path, data)
}

// runSciPy runs the Python side once over all problems and returns its
// parsed output, or an error explaining why no comparison is possible.
func runSciPy(python, script string, reps int, probs []*problem) (*pyOutput, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("script %s not found (run from the repository root or pass -script)", script)
	}
	if _, err := exec.LookPath(python); err != nil {
		return nil, fmt.Errorf("python interpreter %s not found", python)
	}
	args := []string{script, strconv.Itoa(reps)}
	for _, p := range probs {
		args = append(args, fmt.Sprintf("%d:%s", p.n, p.path))
	}
	cmd := exec.Command(python, args...)
	// One BLAS/OpenMP thread: linear_sum_assignment is sequential anyway,
	// and the Go side defaults to one thread.
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out pyOutput
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("%s failed: %v: %s", python, runErr, strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("cannot parse the output of %s: %v", script, err)
	}
	if out.Error != "" {
		return nil, errors.New(out.Error)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s failed: %v", python, runErr)
	}
	if len(out.Results) != len(probs) {
		return nil, fmt.Errorf("%s returned %d results for %d matrices", script, len(out.Results), len(probs))
	}
	for i, r := range out.Results {
		if r.N != probs[i].n || len(r.TimesS) == 0 {
			return nil, fmt.Errorf("%s: unexpected result %d (n=%d, %d times)", script, i, r.N, len(r.TimesS))
		}
	}
	return &out, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}
