package mcmc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Sampler runs several Markov chains in parallel. Its exported fields are
// the run's settings; Init and at least one stage are required.
//
// Every chain c is independent: Init(c, rng) builds its initial state and its
// sweep, and rng (derived from Seed and c only) then drives all of its
// transitions. Chains never share a random source, so the result is the same
// for every Workers and GOMAXPROCS setting.
type Sampler[S any] struct {
	// Chains is the number of chains (>= 1).
	Chains int
	// Burn is the number of sweeps discarded at the start of each chain.
	Burn int
	// Samples is the number of draws recorded per chain (>= 1).
	Samples int
	// Thin is the number of sweeps between recorded draws; 0 means 1.
	Thin int
	// Seed is the master seed from which every chain's seed is derived.
	Seed uint64
	// Workers bounds the number of chains run at once; 0 means GOMAXPROCS.
	Workers int

	// Init returns the initial state of chain c and the stages of its
	// sweep, which are applied in order once per sweep. The kernels are
	// used by chain c only; kernels returned to several chains must be safe
	// for concurrent use. Init is called from the chain's goroutine.
	Init func(c int, rng *rand.Rand) (S, []Stage[S], error)

	// Record, if not nil, appends the traced quantities of a state to dst
	// and returns the extended slice (like strconv.AppendInt). It is called
	// once per recorded draw from the chain's goroutine, so calls for
	// different chains may run concurrently. Every call must append the same
	// number of values.
	Record func(dst []float64, s S) []float64

	// Progress, if not nil, is called about a hundred times per chain and
	// once when each chain ends. Calls are serialized.
	Progress func(Progress)

	// Observe, if not nil, is called with chain c's state at the same
	// points as Progress, or every ObserveEvery sweeps when that is > 0,
	// from the chain's goroutine; calls are serialized with each other and
	// with Progress. It must not keep s, which the chain goes on changing.
	Observe      func(c, sweep int, s S)
	ObserveEvery int

	// Deadline, if not zero, ends every chain before a sweep that would
	// end after it if it took as long as the longest of the chain's latest
	// four sweeps (timed from the end of one to the end of the next, so
	// that recording and reporting count), or less than Reserve(draws)
	// before it when Reserve is not nil, draws being the draws the chain
	// has recorded. A chain the deadline ends is not an error: Run returns
	// what it recorded, and ChainResult.Sweeps says how far it came.
	// Reserve is called from the chains' goroutines, concurrently.
	Deadline time.Time
	Reserve  func(draws int) time.Duration
}

// Progress reports how far a run has come.
type Progress struct {
	Chain  int // chain that reported
	Sweep  int // sweeps completed by that chain, burn-in included
	Sweeps int // sweeps per chain: Burn + Samples*Thin
	Done   int // sweeps completed over all chains
	Total  int // sweeps over all chains: Chains*Sweeps
}

// Result holds the output of Sampler.Run.
type Result[S any] struct {
	Chains []ChainResult[S]
	// Wall is the elapsed wall-clock time of the run.
	Wall time.Duration
}

// ChainResult is the output of one chain.
type ChainResult[S any] struct {
	// Trace holds the recorded draws: Trace[k] is what Record appended for
	// the k-th draw. It is shorter than Samples if the run was cancelled.
	Trace [][]float64
	// Stages holds per-stage acceptance counts after burn-in, in sweep
	// order.
	Stages []StageStats
	// Final is the state at the end of the chain.
	Final S
	// Sweeps is the number of sweeps completed, burn-in included.
	Sweeps int
}

// Run runs the chains and returns their traces. If ctx is cancelled, Run
// stops every chain at its next sweep and returns the partial result along
// with an error wrapping ctx.Err(). If a kernel, Init or Record fails, the
// other chains are stopped and the error of the lowest-numbered failing
// chain is returned with the partial result.
func (sm *Sampler[S]) Run(ctx context.Context) (*Result[S], error) {
	if err := sm.validate(); err != nil {
		return nil, err
	}
	thin := max(sm.Thin, 1)
	sweeps := sm.Burn + sm.Samples*thin
	workers := sm.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, sm.Chains)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	res := &Result[S]{Chains: make([]ChainResult[S], sm.Chains)}
	errs := make([]error, sm.Chains)
	prog := &progressReporter{fn: sm.Progress, total: sm.Chains * sweeps, sweeps: sweeps}
	if sm.Observe != nil {
		prog.observe = func(c, sweep int, s any) { sm.Observe(c, sweep, s.(S)) }
	}

	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				errs[c] = sm.runChain(runCtx, c, thin, sweeps, &res.Chains[c], prog)
				if isFailure(errs[c]) {
					cancel()
				}
			}
		}()
	}
	for c := range sm.Chains {
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	res.Wall = time.Since(start)

	// A chain's own failure takes precedence over the cancellations it
	// caused in other chains.
	for c, err := range errs {
		if isFailure(err) {
			return res, fmt.Errorf("mcmc: Sampler.Run: chain %d: %w", c, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("mcmc: Sampler.Run: %w", err)
	}
	return res, nil
}

// isFailure reports whether err is a chain's own failure rather than the
// result of a cancellation.
func isFailure(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func (sm *Sampler[S]) validate() error {
	switch {
	case sm.Chains < 1:
		return fmt.Errorf("mcmc: Sampler.Run: Chains must be >= 1, got %d", sm.Chains)
	case sm.Samples < 1:
		return fmt.Errorf("mcmc: Sampler.Run: Samples must be >= 1, got %d", sm.Samples)
	case sm.Burn < 0:
		return fmt.Errorf("mcmc: Sampler.Run: Burn must be >= 0, got %d", sm.Burn)
	case sm.Thin < 0:
		return fmt.Errorf("mcmc: Sampler.Run: Thin must be >= 0, got %d", sm.Thin)
	case sm.ObserveEvery < 0:
		return fmt.Errorf("mcmc: Sampler.Run: ObserveEvery must be >= 0, got %d", sm.ObserveEvery)
	case sm.Init == nil:
		return errors.New("mcmc: Sampler.Run: Init is nil")
	}
	return nil
}

func (sm *Sampler[S]) runChain(ctx context.Context, c, thin, sweeps int, out *ChainResult[S], prog *progressReporter) error {
	rng := chainRand(sm.Seed, c)
	state, stages, err := sm.Init(c, rng)
	if err != nil {
		return fmt.Errorf("Init: %w", err)
	}
	if len(stages) == 0 {
		return errors.New("Init returned no stages")
	}
	for k, st := range stages {
		if st.Kernel == nil {
			return fmt.Errorf("Init: stage %d (%q) has a nil Kernel", k, st.Name)
		}
	}
	out.Final = state
	out.Stages = make([]StageStats, len(stages))
	for k, st := range stages {
		out.Stages[k].Name = st.Name
	}

	var (
		flat []float64 // rows of dim values, allocated in chunks that double
		dim  = -1
		buf  []float64
	)
	every := max(1, sweeps/100)
	done := ctx.Done()
	var recent [4]time.Duration // with a deadline: the latest sweeps' durations, newest at sweep%4
	last := time.Now()
	for sweep := 0; sweep < sweeps; sweep++ {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		if !sm.Deadline.IsZero() {
			keep := slices.Max(recent[:])
			if sm.Reserve != nil {
				keep += sm.Reserve(len(out.Trace))
			}
			if time.Until(sm.Deadline) < keep {
				return nil
			}
		}
		counting := sweep >= sm.Burn
		for k, st := range stages {
			for range st.repeat() {
				acc, err := st.Kernel.Step(rng, state)
				if err != nil {
					return fmt.Errorf("sweep %d, stage %d (%q): %w", sweep, k, st.Name, err)
				}
				if counting {
					out.Stages[k].Steps++
					if acc {
						out.Stages[k].Accepted++
					}
				}
			}
		}
		out.Sweeps = sweep + 1
		if sm.Record != nil && counting && (sweep+1-sm.Burn)%thin == 0 {
			buf = sm.Record(buf[:0], state)
			if dim < 0 {
				dim = len(buf)
			}
			if len(buf) != dim {
				return fmt.Errorf("Record appended %d values, want %d as in the first draw", len(buf), dim)
			}
			if len(flat) < dim {
				// A new chunk, as large as the draws so far (at least 256
				// rows, at most what is left): a budget may end the chain
				// long before Samples, which is then only a bound.
				rows := min(max(256, len(out.Trace)), sm.Samples-len(out.Trace))
				flat = make([]float64, rows*dim)
			}
			row := flat[:dim:dim]
			flat = flat[dim:]
			copy(row, buf)
			out.Trace = append(out.Trace, row)
		}
		progress := (sweep+1)%every == 0 || sweep+1 == sweeps
		observe := progress
		if sm.ObserveEvery > 0 {
			observe = (sweep+1)%sm.ObserveEvery == 0
		}
		if progress || observe {
			prog.report(c, sweep+1, state, progress, observe)
		}
		if !sm.Deadline.IsZero() {
			now := time.Now()
			recent[sweep%len(recent)] = now.Sub(last)
			last = now
		}
	}
	return nil
}

// progressReporter serializes progress callbacks and keeps the global count.
type progressReporter struct {
	fn      func(Progress)
	observe func(c, sweep int, s any)
	total   int
	sweeps  int

	mu   sync.Mutex
	last map[int]int
	done int
}

// report calls the observer (if observe) and the progress callback (if
// progress) of chain after sweep sweeps.
func (p *progressReporter) report(chain, sweep int, state any, progress, observe bool) {
	progress = progress && p.fn != nil
	observe = observe && p.observe != nil
	if !progress && !observe {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if observe {
		p.observe(chain, sweep, state)
	}
	if !progress {
		return
	}
	if p.last == nil {
		p.last = make(map[int]int)
	}
	p.done += sweep - p.last[chain]
	p.last[chain] = sweep
	p.fn(Progress{Chain: chain, Sweep: sweep, Sweeps: p.sweeps, Done: p.done, Total: p.total})
}

// Acceptance returns the acceptance counts of each stage summed over the
// chains. Stages are matched by position in the sweep, and take the name of
// the first chain's stage.
func (r *Result[S]) Acceptance() []StageStats {
	if len(r.Chains) == 0 {
		return nil
	}
	out := make([]StageStats, len(r.Chains[0].Stages))
	copy(out, r.Chains[0].Stages)
	for _, ch := range r.Chains[1:] {
		for k := range out {
			if k < len(ch.Stages) {
				out[k].Steps += ch.Stages[k].Steps
				out[k].Accepted += ch.Stages[k].Accepted
			}
		}
	}
	return out
}

// Draws returns the k-th recorded quantity of every chain, as
// draws[chain][draw], ready for SplitRHat and ESS.
func (r *Result[S]) Draws(k int) ([][]float64, error) {
	out := make([][]float64, len(r.Chains))
	for c, ch := range r.Chains {
		out[c] = make([]float64, len(ch.Trace))
		for t, row := range ch.Trace {
			if k < 0 || k >= len(row) {
				return nil, fmt.Errorf("mcmc: Result.Draws: index %d out of range [0, %d)", k, len(row))
			}
			out[c][t] = row[k]
		}
	}
	return out, nil
}

// chainRand returns the random source of chain c for master seed seed. Both
// PCG words are splitmix64 hashes of (seed, c), so distinct chains get
// unrelated streams.
func chainRand(seed uint64, c int) *rand.Rand {
	a := splitmix64(seed ^ splitmix64(2*uint64(c)))
	b := splitmix64(seed ^ splitmix64(2*uint64(c)+1))
	return rand.New(rand.NewPCG(a, b))
}

// splitmix64 is the finalizer of Steele, Lea and Flood's SplitMix64.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
