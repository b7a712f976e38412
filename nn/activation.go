package nn

import (
	"math"

	"github.com/permlab/permlab/ad"
)

// ReLU is the layer y = max(x, 0), elementwise; its derivative at 0 is 0.
type ReLU struct{}

// Forward applies max(x, 0).
func (ReLU) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	return ad.ReLU(x)
}

// Params returns nil.
func (ReLU) Params() []*ad.Param { return nil }

// Sigmoid is the layer y = 1/(1+exp(−x)), elementwise.
type Sigmoid struct{}

// Forward applies the logistic function.
func (Sigmoid) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	return ad.Sigmoid(x)
}

// Params returns nil.
func (Sigmoid) Params() []*ad.Param { return nil }

// Tanh is the layer y = tanh(x), elementwise.
type Tanh struct{}

// Forward applies tanh.
func (Tanh) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	return ad.Tanh(x)
}

// Params returns nil.
func (Tanh) Params() []*ad.Param { return nil }

// Softplus is the layer y = log(1+exp(x)), elementwise, a smooth ReLU.
type Softplus struct{}

// Forward applies softplus.
func (Softplus) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	return ad.Softplus(x)
}

// Params returns nil.
func (Softplus) Params() []*ad.Param { return nil }

// LeakyReLU is the layer y = x for x > 0 and y = Slope·x otherwise. Its
// derivative at 0 is taken as Slope.
type LeakyReLU struct {
	Slope float64
}

// Forward applies the leaky rectifier.
func (l LeakyReLU) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	return leakyReLU(x, l.Slope)
}

// Params returns nil.
func (LeakyReLU) Params() []*ad.Param { return nil }

// ELU is the exponential linear unit (Clevert et al., 2016) with α = 1:
// y = x for x > 0 and y = exp(x) − 1 otherwise, which is smooth at 0
// (y′ = 1 from both sides).
type ELU struct{}

// Forward applies the ELU.
func (ELU) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	return elu(x)
}

// Params returns nil.
func (ELU) Params() []*ad.Param { return nil }

// leakyReLU returns x where x > 0 and slope·x elsewhere, as one op.
func leakyReLU(x *ad.Var, slope float64) *ad.Var {
	return pointwise(x, func(v float64) (float64, float64) {
		if v > 0 {
			return v, 1
		}
		return slope * v, slope
	})
}

// elu returns x where x > 0 and exp(x) − 1 elsewhere, as one op.
func elu(x *ad.Var) *ad.Var {
	return pointwise(x, func(v float64) (float64, float64) {
		if v > 0 {
			return v, 1
		}
		e := math.Expm1(v)
		return e, e + 1
	})
}

// pointwise records the elementwise map y_i = f(x_i), where f returns the
// value and the derivative; the derivatives are kept for the adjoint
// x̄_i += f′(x_i)·ȳ_i.
func pointwise(x *ad.Var, f func(float64) (y, dy float64)) *ad.Var {
	if x == nil {
		return nil
	}
	t := x.Tape()
	if !ready(t, x) {
		return dead(t)
	}
	xv := x.Value()
	y := t.Alloc(len(xv))
	var dy []float64
	if x.RequiresGrad() {
		dy = t.Alloc(len(xv))
		for i, v := range xv {
			y[i], dy[i] = f(v)
		}
	} else {
		for i, v := range xv {
			y[i], _ = f(v)
		}
	}
	return t.Custom(x.Shape(), y, []*ad.Var{x}, func(g []float64, gIn [][]float64) {
		if gx := gIn[0]; gx != nil {
			for i, d := range dy {
				gx[i] += d * g[i]
			}
		}
	})
}
