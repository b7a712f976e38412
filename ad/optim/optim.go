// Package optim implements first-order optimizers for ad.Param values,
// gradient clipping, and schedules for learning rates and temperatures.
//
// An optimizer is built over a fixed list of parameters. Each Step reads the
// gradients accumulated by ad.Tape.Backward, updates the values in place and
// zeroes the gradients, so a training loop is
//
//	for step := 0; step < n; step++ {
//		tape.Reset()
//		loss := model(tape)          // uses tape.Param(p) for each p
//		tape.Backward(loss)
//		opt.Step()
//	}
//
// SGD with momentum μ updates v ← μ v + g, θ ← θ − η v. Adam (Kingma & Ba,
// 2015) keeps exponential averages m ← β₁ m + (1−β₁) g and
// v ← β₂ v + (1−β₂) g² and steps θ ← θ − η m̂ / (√v̂ + ε) with the
// bias-corrected m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ).
//
// Optimizer state (step count, moments) is exported through State and
// SetState so that a run can be checkpointed and resumed exactly.
package optim

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
)

// Optimizer updates parameters from their accumulated gradients.
type Optimizer interface {
	// Step applies one update with learning rate lr and zeroes the gradients.
	Step(lr float64) error
	// Params returns the parameters being optimized.
	Params() []*ad.Param
	// State returns a deep copy of the optimizer's internal state.
	State() State
	// SetState restores a state returned by State.
	SetState(State) error
}

// State is the serializable internal state of an optimizer: the number of
// steps taken and one slot per parameter for each moment it keeps.
type State struct {
	Steps   int
	Moments [][][]float64 // Moments[k][i] is moment k of parameter i
}

func checkParams(name string, params []*ad.Param) error {
	if len(params) == 0 {
		return fmt.Errorf("optim: %s: no parameters", name)
	}
	for i, p := range params {
		if p == nil || p.Value == nil {
			return fmt.Errorf("optim: %s: parameter %d is nil", name, i)
		}
		if p.Grad == nil || len(p.Grad.Data) != len(p.Value.Data) {
			p.Grad = &ad.Tensor{Shape: append([]int(nil), p.Value.Shape...), Data: make([]float64, len(p.Value.Data))}
		}
	}
	return nil
}

func zeros(params []*ad.Param) [][]float64 {
	out := make([][]float64, len(params))
	for i, p := range params {
		out[i] = make([]float64, len(p.Value.Data))
	}
	return out
}

func copyState(moments ...[][]float64) [][][]float64 {
	out := make([][][]float64, len(moments))
	for k, m := range moments {
		out[k] = make([][]float64, len(m))
		for i, v := range m {
			out[k][i] = append([]float64(nil), v...)
		}
	}
	return out
}

func restore(name string, s State, dst ...[][]float64) error {
	if s.Steps < 0 {
		return fmt.Errorf("optim: %s: state has %d steps", name, s.Steps)
	}
	if len(s.Moments) != len(dst) {
		return fmt.Errorf("optim: %s: state has %d moments, want %d", name, len(s.Moments), len(dst))
	}
	for k, m := range dst {
		if len(s.Moments[k]) != len(m) {
			return fmt.Errorf("optim: %s: state has %d parameters, want %d", name, len(s.Moments[k]), len(m))
		}
		for i := range m {
			if len(s.Moments[k][i]) != len(m[i]) {
				return fmt.Errorf("optim: %s: state of parameter %d has %d values, want %d", name, i, len(s.Moments[k][i]), len(m[i]))
			}
		}
	}
	for k, m := range dst {
		for i := range m {
			copy(m[i], s.Moments[k][i])
		}
	}
	return nil
}

func checkLR(name string, lr float64) error {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("optim: %s: learning rate must be finite and >= 0, got %v", name, lr)
	}
	return nil
}

// SGD is stochastic gradient descent with optional (heavy-ball) momentum.
type SGD struct {
	Momentum float64
	params   []*ad.Param
	velocity [][]float64
	steps    int
}

// NewSGD returns SGD over params with the given momentum in [0, 1).
func NewSGD(params []*ad.Param, momentum float64) (*SGD, error) {
	if err := checkParams("NewSGD", params); err != nil {
		return nil, err
	}
	if !(momentum >= 0 && momentum < 1) {
		return nil, fmt.Errorf("optim: NewSGD: momentum must be in [0, 1), got %v", momentum)
	}
	return &SGD{Momentum: momentum, params: params, velocity: zeros(params)}, nil
}

// Step implements Optimizer.
func (o *SGD) Step(lr float64) error {
	if err := checkLR("SGD", lr); err != nil {
		return err
	}
	for i, p := range o.params {
		v := o.velocity[i]
		for j, g := range p.Grad.Data {
			v[j] = o.Momentum*v[j] + g
			p.Value.Data[j] -= lr * v[j]
		}
		p.ZeroGrad()
	}
	o.steps++
	return nil
}

// Params implements Optimizer.
func (o *SGD) Params() []*ad.Param { return o.params }

// State implements Optimizer.
func (o *SGD) State() State { return State{Steps: o.steps, Moments: copyState(o.velocity)} }

// SetState implements Optimizer.
func (o *SGD) SetState(s State) error {
	if err := restore("SGD", s, o.velocity); err != nil {
		return err
	}
	o.steps = s.Steps
	return nil
}

// Adam is the Adam optimizer with bias correction.
type Adam struct {
	Beta1, Beta2, Eps float64
	params            []*ad.Param
	m, v              [][]float64
	steps             int
}

// NewAdam returns Adam over params with the usual defaults β₁ = 0.9,
// β₂ = 0.999, ε = 1e-8; change the fields before the first Step to override.
func NewAdam(params []*ad.Param) (*Adam, error) {
	if err := checkParams("NewAdam", params); err != nil {
		return nil, err
	}
	return &Adam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, params: params, m: zeros(params), v: zeros(params)}, nil
}

// Step implements Optimizer.
func (o *Adam) Step(lr float64) error {
	if err := checkLR("Adam", lr); err != nil {
		return err
	}
	if !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1 && o.Eps > 0) {
		return fmt.Errorf("optim: Adam: need 0 <= β₁, β₂ < 1 and ε > 0, got %v, %v, %v", o.Beta1, o.Beta2, o.Eps)
	}
	for _, p := range o.params {
		if p.Grad == nil || len(p.Grad.Data) != len(p.Value.Data) {
			return fmt.Errorf("optim: Adam: parameter %q: gradient does not match its %d values", p.Name, len(p.Value.Data))
		}
	}
	o.steps++
	c1 := 1 - math.Pow(o.Beta1, float64(o.steps))
	c2 := 1 - math.Pow(o.Beta2, float64(o.steps))
	c := f64.AdamCoef{B1: o.Beta1, OneMinusB1: 1 - o.Beta1, B2: o.Beta2, OneMinusB2: 1 - o.Beta2,
		Step: lr / c1, C2: c2, Eps: o.Eps}
	// Each entry's update is
	//	m ← β₁m + (1−β₁)g,  v ← β₂v + ((1−β₂)g)g,  θ ← θ − (ηₜm)/(√(v/c₂) + ε)
	// with ηₜ = η/c₁ and every operation rounded on its own; the entries
	// are independent, so how they are split over goroutines does not
	// change a bit.
	chunks(o.params, func(i, j0, j1 int) {
		p := o.params[i]
		f64.AdamUpdate(&c, p.Value.Data[j0:j1], p.Grad.Data[j0:j1], o.m[i][j0:j1], o.v[i][j0:j1])
	})
	return nil
}

// chunkLen is the number of entries one goroutine updates at a time.
const chunkLen = 1 << 14

// chunks calls f(i, j0, j1) for consecutive ranges [j0, j1) covering
// every entry of every parameter i, on up to GOMAXPROCS goroutines when
// there are at least 4·chunkLen entries. The calls must be independent.
func chunks(params []*ad.Param, f func(i, j0, j1 int)) {
	total := 0
	for _, p := range params {
		total += len(p.Value.Data)
	}
	workers := runtime.GOMAXPROCS(0)
	if workers <= 1 || total < 4*chunkLen {
		for i, p := range params {
			f(i, 0, len(p.Value.Data))
		}
		return
	}
	type span struct{ i, j0, j1 int }
	spans := make([]span, 0, total/chunkLen+len(params))
	for i, p := range params {
		n := len(p.Value.Data)
		for j0 := 0; j0 < n; j0 += chunkLen {
			spans = append(spans, span{i, j0, min(j0+chunkLen, n)})
		}
	}
	workers = min(workers, len(spans))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range workers {
		wg.Go(func() {
			for {
				q := int(next.Add(1)) - 1
				if q >= len(spans) {
					return
				}
				s := spans[q]
				f(s.i, s.j0, s.j1)
			}
		})
	}
	wg.Wait()
}

// Params implements Optimizer.
func (o *Adam) Params() []*ad.Param { return o.params }

// State implements Optimizer.
func (o *Adam) State() State { return State{Steps: o.steps, Moments: copyState(o.m, o.v)} }

// SetState implements Optimizer.
func (o *Adam) SetState(s State) error {
	if err := restore("Adam", s, o.m, o.v); err != nil {
		return err
	}
	o.steps = s.Steps
	return nil
}

// ClipGradNorm scales the gradients of params so that their joint Euclidean
// norm is at most maxNorm, and returns the norm before clipping. A NaN or
// infinite norm is reported as an error and the gradients are left as they
// are.
func ClipGradNorm(params []*ad.Param, maxNorm float64) (float64, error) {
	if !(maxNorm > 0) {
		return 0, fmt.Errorf("optim: ClipGradNorm: maxNorm must be > 0, got %v", maxNorm)
	}
	ss := 0.0
	for _, p := range params {
		for _, g := range p.Grad.Data {
			ss += g * g
		}
	}
	norm := math.Sqrt(ss)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("optim: ClipGradNorm: gradient norm is %v", norm)
	}
	if norm > maxNorm {
		s := maxNorm / norm
		for _, p := range params {
			for j := range p.Grad.Data {
				p.Grad.Data[j] *= s
			}
		}
	}
	return norm, nil
}
