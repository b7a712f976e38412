package train

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
)

// regression is y = x·w + b with noisy inputs: the loss of a batch is the
// mean of (x̃ᵢ·w + b − yᵢ)², where x̃ᵢ = xᵢ + 0.01·ε from the step's rng, so
// both the order of the examples and the rng shape the trajectory.
type regression struct {
	x      []float64 // n×d
	y      []float64 // n
	d      int
	w, b   *ad.Param
	onStep func(step int) // called with the number of Loss calls so far
	calls  int
	delay  time.Duration
}

func newRegression(n, d int) *regression {
	src := rand.New(rand.NewPCG(1, 2))
	r := &regression{x: make([]float64, n*d), y: make([]float64, n), d: d}
	for i := range n {
		for j := range d {
			r.x[i*d+j] = src.NormFloat64()
			r.y[i] += float64(j+1) * r.x[i*d+j]
		}
		r.y[i] += 0.5 + 0.1*src.NormFloat64()
	}
	r.w = ad.NewParam("w", ad.Zeros(d, 1))
	r.b = ad.NewParam("b", ad.Zeros(1))
	return r
}

func (r *regression) params() []*ad.Param { return []*ad.Param{r.w, r.b} }

func (r *regression) Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error) {
	if r.onStep != nil {
		r.onStep(r.calls)
	}
	r.calls++
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	xs := ad.Zeros(len(batch), r.d)
	ys := ad.Zeros(len(batch), 1)
	for k, i := range batch {
		for j := range r.d {
			xs.Data[k*r.d+j] = r.x[i*r.d+j] + 0.01*rng.NormFloat64()
		}
		ys.Data[k] = r.y[i]
	}
	pred := ad.Add(ad.MatMul(t.Const(xs), t.Param(r.w)), t.Param(r.b))
	return ad.Mean(ad.Square(ad.Sub(pred, t.Const(ys)))), nil
}

func baseOptions() Options {
	return Options{N: 37, BatchSize: 5, Epochs: 6, Seed: 11, LR: constLR(0.2)}
}

type constLR float64

func (c constLR) At(int) float64 { return float64(c) }

func TestRunLossFalls(t *testing.T) {
	r := newRegression(37, 3)
	o := baseOptions()
	o.Epochs = 15
	res, err := Run(context.Background(), r.params(), r, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := 15 * 8; res.Steps != want || len(res.Loss) != want || len(res.Epochs) != 15 {
		t.Fatalf("%d steps, %d losses, %d epochs; want %d, %d, 15", res.Steps, len(res.Loss), len(res.Epochs), want, want)
	}
	first, last := res.Loss[0], res.Epochs[14].Loss
	// The noise floor is 0.01 (label noise of sd 0.1); at zero weights the
	// expected loss is 1+4+9+0.5² ≈ 14.
	if first < 5 || last > 0.1 {
		t.Fatalf("loss went from %v (step 0) to %v (mean of the last epoch), want from above 5 to below 0.1", first, last)
	}
	// With 37 examples and label noise of sd 0.1 the least-squares
	// weights are within about 0.02 of the truth; Adam's last steps add
	// jitter of the order of its step size.
	for j, want := range []float64{1, 2, 3} {
		if got := r.w.Value.Data[j]; math.Abs(got-want) > 0.1 {
			t.Errorf("w[%d] = %v, want about %v", j, got, want)
		}
	}
}

func TestEpochOrder(t *testing.T) {
	const n, batch = 23, 4
	var seen [][]int
	task := taskFunc(func(t *ad.Tape, b []int, _ *rand.Rand) (*ad.Var, error) {
		seen = append(seen, slices.Clone(b))
		return ad.Mean(t.Param(ad.NewParam("z", ad.Zeros(1)))), nil
	})
	p := ad.NewParam("p", ad.Zeros(1))
	if _, err := Run(context.Background(), []*ad.Param{p}, task, Options{N: n, BatchSize: batch, Epochs: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	per := StepsPerEpoch(n, batch)
	if len(seen) != 2*per || per != 6 {
		t.Fatalf("%d steps, want 2×6", len(seen))
	}
	var orders [2][]int
	for s, b := range seen {
		want := batch
		if s%per == per-1 {
			want = n % batch
		}
		if len(b) != want {
			t.Fatalf("step %d has %d examples, want %d", s, len(b), want)
		}
		orders[s/per] = append(orders[s/per], b...)
	}
	for e, o := range orders {
		if !slices.Equal(o, EpochRand(3, e).Perm(n)) {
			t.Errorf("epoch %d visits %v, want EpochRand(3, %d).Perm(%d)", e, o, e, n)
		}
	}
	if slices.Equal(orders[0], orders[1]) {
		t.Error("both epochs visit the examples in the same order")
	}
}

type taskFunc func(*ad.Tape, []int, *rand.Rand) (*ad.Var, error)

func (f taskFunc) Loss(t *ad.Tape, b []int, rng *rand.Rand) (*ad.Var, error) { return f(t, b, rng) }

// sameRun reports the first difference between two runs' losses and
// parameters, comparing bits.
func sameRun(t *testing.T, got, want *Result, gotP, wantP []*ad.Param) {
	t.Helper()
	if len(got.Loss) != len(want.Loss) {
		t.Fatalf("%d losses, want %d", len(got.Loss), len(want.Loss))
	}
	for i := range got.Loss {
		if math.Float64bits(got.Loss[i]) != math.Float64bits(want.Loss[i]) {
			t.Fatalf("loss %d = %v, want %v", i, got.Loss[i], want.Loss[i])
		}
	}
	for i, p := range gotP {
		for j, v := range p.Value.Data {
			if w := wantP[i].Value.Data[j]; math.Float64bits(v) != math.Float64bits(w) {
				t.Fatalf("%s[%d] = %v, want %v", p.Name, j, v, w)
			}
		}
	}
	if len(got.Epochs) != len(want.Epochs) {
		t.Fatalf("%d epochs recorded, want %d", len(got.Epochs), len(want.Epochs))
	}
}

func TestResumeAfterCancel(t *testing.T) {
	ref := newRegression(37, 3)
	want, err := Run(context.Background(), ref.params(), ref, baseOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Stop at step 19 (epoch 2, step 3 of 8) and at 16 (an epoch end).
	for _, stopAt := range []int{19, 16} {
		o := baseOptions()
		o.Checkpoint = filepath.Join(t.TempDir(), "ck")
		o.CheckpointEvery = 7
		ctx, cancel := context.WithCancel(context.Background())
		r := newRegression(37, 3)
		r.onStep = func(s int) {
			if s == stopAt-1 {
				cancel() // seen by Run before step stopAt
			}
		}
		part, err := Run(ctx, r.params(), r, o)
		if !errors.Is(err, context.Canceled) || part.Steps != stopAt {
			t.Fatalf("stop at %d: err %v after %d steps, want context.Canceled after %d", stopAt, err, part.Steps, stopAt)
		}
		cancel()
		r2 := newRegression(37, 3) // fresh parameters: all state must come from the file
		got, err := Run(context.Background(), r2.params(), r2, o)
		if err != nil {
			t.Fatal(err)
		}
		if got.Resumed != stopAt {
			t.Fatalf("resumed from %d, want %d", got.Resumed, stopAt)
		}
		sameRun(t, got, want, r2.params(), ref.params())
	}
}

// TestResumeAfterKill kills a training process with SIGKILL at an arbitrary
// moment and checks that resuming from whatever checkpoint it left ends with
// the parameters of an uninterrupted run.
func TestResumeAfterKill(t *testing.T) {
	longtest.Skip(t, "starts a subprocess")
	ck := filepath.Join(t.TempDir(), "ck")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTrain$")
	cmd.Env = append(os.Environ(), "TRAIN_HELPER_CHECKPOINT="+ck)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the second checkpoint (written every 3 steps), then kill.
	deadline := time.Now().Add(20 * time.Second)
	var first time.Time
	for {
		st, err := os.Stat(ck)
		if err == nil && first.IsZero() {
			first = st.ModTime()
		}
		if err == nil && st.ModTime() != first {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the helper wrote no second checkpoint in 20 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	r := newRegression(37, 3)
	o := helperOptions(ck)
	got, err := Run(context.Background(), r.params(), r, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Resumed == 0 || got.Resumed == got.Steps {
		t.Fatalf("resumed from step %d of %d: the kill did not interrupt the run", got.Resumed, got.Steps)
	}
	ref := newRegression(37, 3)
	o.Checkpoint = ""
	want, err := Run(context.Background(), ref.params(), ref, o)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, got, want, r.params(), ref.params())
}

func helperOptions(ck string) Options {
	o := baseOptions()
	o.Epochs = 40
	o.Checkpoint = ck
	o.CheckpointEvery = 3
	return o
}

// TestHelperTrain is the process TestResumeAfterKill kills; it does nothing
// unless run by that test.
func TestHelperTrain(t *testing.T) {
	ck := os.Getenv("TRAIN_HELPER_CHECKPOINT")
	if ck == "" {
		t.Skip("helper process for TestResumeAfterKill")
	}
	r := newRegression(37, 3)
	r.delay = time.Millisecond
	Run(context.Background(), r.params(), r, helperOptions(ck))
}

func TestCheckpointMismatch(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions()
	o.Epochs = 1
	o.Checkpoint = filepath.Join(dir, "ck")
	r := newRegression(37, 3)
	if _, err := Run(context.Background(), r.params(), r, o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Options, *regression)
		want string
	}{
		{"N", func(o *Options, _ *regression) { o.N = 36 }, "N = 37, this run has 36"},
		{"batch", func(o *Options, _ *regression) { o.BatchSize = 6 }, "BatchSize = 5, this run has 6"},
		{"seed", func(o *Options, _ *regression) { o.Seed = 12 }, "Seed = 11, this run has 12"},
		{"shape", func(_ *Options, r *regression) { r.w = ad.NewParam("w", ad.Zeros(1, 3)) }, `"w" of shape [3 1], this run's is "w" of shape [1 3]`},
		{"name", func(_ *Options, r *regression) { r.b.Name = "bias" }, `this run's is "bias"`},
		{"epochs", func(o *Options, _ *regression) { o.BatchSize = 5; o.Epochs = 0 }, "Epochs must be >= 1"},
	} {
		o2 := o
		r2 := newRegression(37, 3)
		tc.edit(&o2, r2)
		_, err := Run(context.Background(), r2.params(), r2, o2)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	// More epochs continue the finished run.
	o.Epochs = 2
	r3 := newRegression(37, 3)
	res, err := Run(context.Background(), r3.params(), r3, o)
	if err != nil || res.Resumed != 8 || res.Steps != 16 {
		t.Fatalf("extending to 2 epochs: resumed %d, steps %d, err %v", res.Resumed, res.Steps, err)
	}
	// A corrupt file is an error, not a fresh start.
	os.WriteFile(o.Checkpoint, []byte("garbage"), 0o644)
	if _, err := Run(context.Background(), r3.params(), r3, o); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("corrupt checkpoint: %v", err)
	}
}

func TestStopAndErrors(t *testing.T) {
	t.Run("ErrStop", func(t *testing.T) {
		o := baseOptions()
		o.Checkpoint = filepath.Join(t.TempDir(), "ck")
		var calls []int
		o.OnEpoch = func(s EpochStats) error {
			calls = append(calls, s.Epoch)
			if s.Epoch == 1 {
				return ErrStop
			}
			return nil
		}
		r := newRegression(37, 3)
		res, err := Run(context.Background(), r.params(), r, o)
		if err != nil || !res.Stopped || res.Steps != 16 || !slices.Equal(calls, []int{0, 1}) {
			t.Fatalf("err %v, stopped %v after %d steps, OnEpoch for %v", err, res.Stopped, res.Steps, calls)
		}
		// Running again does not train past the stop.
		res, err = Run(context.Background(), r.params(), r, o)
		if err != nil || !res.Stopped || res.Steps != 16 || len(calls) != 2 {
			t.Fatalf("rerun: err %v, stopped %v after %d steps", err, res.Stopped, res.Steps)
		}
	})
	t.Run("OnEpoch-error", func(t *testing.T) {
		o := baseOptions()
		o.OnEpoch = func(EpochStats) error { return errors.New("boom") }
		r := newRegression(37, 3)
		if _, err := Run(context.Background(), r.params(), r, o); err == nil || !strings.Contains(err.Error(), "after epoch 0: boom") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("NaN", func(t *testing.T) {
		r := newRegression(37, 3)
		task := taskFunc(func(t *ad.Tape, b []int, rng *rand.Rand) (*ad.Var, error) {
			l, err := r.Loss(t, b, rng)
			if r.calls == 4 {
				l = ad.Scale(l, math.NaN())
			}
			return l, err
		})
		if _, err := Run(context.Background(), r.params(), task, baseOptions()); err == nil || !strings.Contains(err.Error(), "step 3: loss is NaN (epoch 0)") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("options", func(t *testing.T) {
		r := newRegression(37, 3)
		for _, tc := range []struct {
			edit func(*Options)
			want string
		}{
			{func(o *Options) { o.N = 0 }, "N must be >= 1"},
			{func(o *Options) { o.BatchSize = -1 }, "BatchSize must be >= 1"},
			{func(o *Options) { o.Clip = math.NaN() }, "Clip must be >= 0"},
			{func(o *Options) { o.LR = constLR(-1) }, "learning rate"},
			{func(o *Options) { o.CheckpointEvery = -2 }, "CheckpointEvery"},
		} {
			o := baseOptions()
			tc.edit(&o)
			if _, err := Run(context.Background(), r.params(), r, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		}
		if _, err := Run(context.Background(), nil, r, baseOptions()); err == nil {
			t.Error("no parameters: no error")
		}
		if _, err := Run(context.Background(), []*ad.Param{r.w, r.w}, r, baseOptions()); err == nil {
			t.Error("a parameter listed twice: no error")
		}
		if _, err := Run(context.Background(), r.params(), nil, baseOptions()); err == nil {
			t.Error("nil task: no error")
		}
	})
}

func TestProgressLines(t *testing.T) {
	var b strings.Builder
	o := baseOptions()
	o.Epochs = 2
	o.Progress = &b
	r := newRegression(37, 3)
	if _, err := Run(context.Background(), r.params(), r, o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "epoch 2/2: step 16, mean loss ") {
		t.Fatalf("progress output %q", b.String())
	}
	// With 10 or more steps an epoch, a line every tenth of one too.
	b.Reset()
	o.BatchSize = 3 // 13 steps an epoch: a line after each step but the last
	o.Epochs = 1
	if _, err := Run(context.Background(), r.params(), r, o); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 13 || !strings.HasPrefix(lines[0], "epoch 1/1: step 1, 7%, running mean loss ") ||
		!strings.HasPrefix(lines[12], "epoch 1/1: step 13, mean loss ") {
		t.Fatalf("progress output %q", b.String())
	}
}
