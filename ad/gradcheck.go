package ad

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GradCheck compares the reverse-mode gradient of a function with central
// finite differences, (f(x+h·e_i) − f(x−h·e_i)) / 2h, element by element.
//
// A non-scalar output y is reduced to the scalar Σ_k w_k y_k with fixed
// pseudo-random weights w, so every output element is checked.
type GradCheck struct {
	// Step is the finite-difference step h; 0 means 1e-6.
	Step float64
	// Tol bounds |analytic − numeric| / max(1, |numeric|); 0 means 1e-6.
	Tol float64
}

// Check evaluates f at inputs, differentiates it, and returns an error naming
// the first element whose gradient disagrees with the finite difference. f
// receives one Variable per input, in order. The inputs are not modified.
func (c GradCheck) Check(f func(t *Tape, xs []*Var) *Var, inputs ...*Tensor) error {
	h := c.Step
	if h == 0 {
		h = 1e-6
	}
	tol := c.Tol
	if tol == 0 {
		tol = 1e-6
	}
	xs := make([]*Tensor, len(inputs))
	for i, in := range inputs {
		xs[i] = in.Clone()
	}
	t := NewTape()
	var weights []float64
	eval := func(withGrad bool) (float64, [][]float64, error) {
		t.Reset()
		vars := make([]*Var, len(xs))
		for i, x := range xs {
			vars[i] = t.Variable(x)
		}
		y := f(t, vars)
		if err := t.Err(); err != nil {
			return 0, nil, err
		}
		if y == nil {
			return 0, nil, fmt.Errorf("ad: GradCheck: f returned nil")
		}
		if weights == nil {
			rng := rand.New(rand.NewPCG(1, 2))
			weights = make([]float64, len(y.val))
			for k := range weights {
				weights[k] = 0.5 + rng.Float64()
			}
		}
		if len(weights) != len(y.val) {
			return 0, nil, fmt.Errorf("ad: GradCheck: output size changed")
		}
		loss := y
		if len(y.val) != 1 || weights[0] != 1 {
			w, _ := NewTensor(y.shape, weights)
			loss = Sum(Mul(y, t.Const(w)))
		}
		val := loss.val[0]
		if !withGrad {
			return val, nil, nil
		}
		if err := t.Backward(loss); err != nil {
			return 0, nil, err
		}
		grads := make([][]float64, len(vars))
		for i, v := range vars {
			grads[i] = make([]float64, len(v.val))
			if v.grad != nil {
				copy(grads[i], v.grad)
			}
		}
		return val, grads, nil
	}
	_, grads, err := eval(true)
	if err != nil {
		return err
	}
	for i, x := range xs {
		for j := range x.Data {
			orig := x.Data[j]
			x.Data[j] = orig + h
			fp, _, err := eval(false)
			if err != nil {
				return err
			}
			x.Data[j] = orig - h
			fm, _, err := eval(false)
			if err != nil {
				return err
			}
			x.Data[j] = orig
			num := (fp - fm) / (2 * h)
			ana := grads[i][j]
			if math.IsNaN(ana) || math.Abs(ana-num) > tol*math.Max(1, math.Abs(num)) {
				return fmt.Errorf("ad: GradCheck: input %d element %d: analytic %.10g, numeric %.10g", i, j, ana, num)
			}
		}
	}
	return nil
}

// CheckGradient runs GradCheck with its default step and tolerance.
func CheckGradient(f func(t *Tape, xs []*Var) *Var, inputs ...*Tensor) error {
	return GradCheck{}.Check(f, inputs...)
}
