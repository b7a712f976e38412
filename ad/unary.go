package ad

import (
	"math"

	"github.com/permlab/permlab/internal/par"
)

// unary records y = f(x) elementwise, with adjoint x̄ += ȳ · dfdx(x, y).
func unary(op string, x *Var, f func(float64) float64, back func(*Var)) *Var {
	t := tapeOf(x)
	if t == nil || !t.check(op, x) {
		return deadOf(t)
	}
	y := t.newOp(x.shape, back, x)
	y.a = x
	xv, yv := x.val, y.val
	if len(xv) <= par.Grain {
		mapTo(yv, xv, f)
	} else {
		par.Range(len(xv), par.Grain, func(lo, hi int) { mapTo(yv[lo:hi], xv[lo:hi], f) })
	}
	return y
}

// Elementwise loops over long slices run on several goroutines through
// par.Range, each entry computed as the serial loop computes it, so the
// bits do not depend on the number of threads. The closure is made only
// on that path: a closure handed to par.Range escapes to the heap, and
// the tape's ops allocate nothing when their buffers come from its pool.

// mapTo sets y[i] = f(x[i]).
func mapTo(y, x []float64, f func(float64) float64) {
	for i, xi := range x {
		y[i] = f(xi)
	}
}

// addTo adds x to y, or with set, stores 0 + x in y (a −0 turned into
// +0, as adding to a zeroed y would give).
func addTo(y, x []float64, set bool) {
	if set {
		for i, v := range x {
			y[i] = 0 + v
		}
		return
	}
	for i, v := range x {
		y[i] += v
	}
}

// addScaled adds c·x to y.
func addScaled(y, x []float64, c float64) {
	for i, v := range x {
		y[i] += c * v
	}
}

// deadOf returns the tape's dead Var, or nil without a tape.
func deadOf(t *Tape) *Var {
	if t == nil {
		return nil
	}
	return t.deadVar()
}

// Neg returns -x.
func Neg(x *Var) *Var {
	return unary("Neg", x, func(v float64) float64 { return -v }, backNeg)
}

func backNeg(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] -= gy
	}
}

// Exp returns exp(x) elementwise.
func Exp(x *Var) *Var { return unary("Exp", x, math.Exp, backExp) }

func backExp(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] += gy * y.val[i]
	}
}

// Log returns the natural logarithm of x elementwise.
func Log(x *Var) *Var { return unary("Log", x, math.Log, backLog) }

func backLog(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] += gy / y.a.val[i]
	}
}

// Log1p returns log(1 + x) elementwise, accurate for small x.
func Log1p(x *Var) *Var { return unary("Log1p", x, math.Log1p, backLog1p) }

func backLog1p(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] += gy / (1 + y.a.val[i])
	}
}

// sigmoid is the logistic function 1/(1+exp(-x)), computed without overflow.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// Sigmoid returns 1/(1+exp(-x)) elementwise.
func Sigmoid(x *Var) *Var { return unary("Sigmoid", x, sigmoid, backSigmoid) }

func backSigmoid(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		s := y.val[i]
		g[i] += gy * s * (1 - s)
	}
}

// softplus is log(1+exp(x)), computed without overflow.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// Softplus returns log(1+exp(x)) elementwise, stable for large |x|.
func Softplus(x *Var) *Var { return unary("Softplus", x, softplus, backSoftplus) }

func backSoftplus(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] += gy * sigmoid(y.a.val[i])
	}
}

// ReLU returns max(x, 0) elementwise. Its derivative at 0 is taken as 0.
func ReLU(x *Var) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("ReLU", x) {
		return deadOf(t)
	}
	// unary's loop, with max inlined rather than called through a func
	// value for every element.
	y := t.newOp(x.shape, backReLU, x)
	y.a = x
	out := y.val[:len(x.val)]
	for i, v := range x.val {
		out[i] = max(v, 0)
	}
	return y
}

// backReLU adds ȳ to x̄ where x > 0. The choice is made on the bits
// (a mask from the comparison) rather than by a branch, which a sign that
// changes at random would mispredict half the time; a fresh adjoint is
// written as 0 + ȳ or +0, the bits it would hold after zeroing.
func backReLU(y *Var) {
	if !y.a.needGrad {
		return
	}
	g, acc := y.a.gradOut()
	xv := y.a.val
	gy := y.grad[:len(g)]
	xv = xv[:len(g)]
	if acc {
		for i, v := range gy {
			old := math.Float64bits(g[i])
			sum := math.Float64bits(g[i] + v)
			m := posMask(xv[i])
			g[i] = math.Float64frombits(sum&m | old&^m)
		}
		return
	}
	for i, v := range gy {
		g[i] = math.Float64frombits(math.Float64bits(0+v) & posMask(xv[i]))
	}
}

// posMask returns all ones if v > 0 and zero otherwise (NaN included).
func posMask(v float64) uint64 {
	var b uint64
	if v > 0 {
		b = 1
	}
	return -b
}

// Tanh returns tanh(x) elementwise.
func Tanh(x *Var) *Var { return unary("Tanh", x, math.Tanh, backTanh) }

func backTanh(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		th := y.val[i]
		g[i] += gy * (1 - th*th)
	}
}

// Square returns x² elementwise.
func Square(x *Var) *Var {
	return unary("Square", x, func(v float64) float64 { return v * v }, backSquare)
}

func backSquare(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] += 2 * gy * y.a.val[i]
	}
}

// Sqrt returns √x elementwise.
func Sqrt(x *Var) *Var { return unary("Sqrt", x, math.Sqrt, backSqrt) }

func backSqrt(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		g[i] += gy * 0.5 / y.val[i]
	}
}

// Abs returns |x| elementwise. Its derivative at 0 is taken as 0.
func Abs(x *Var) *Var { return unary("Abs", x, math.Abs, backAbs) }

func backAbs(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	for i, gy := range y.grad {
		switch x := y.a.val[i]; {
		case x > 0:
			g[i] += gy
		case x < 0:
			g[i] -= gy
		}
	}
}

// Pow returns x^p elementwise for a constant exponent p.
func Pow(x *Var, p float64) *Var {
	y := unary("Pow", x, func(v float64) float64 { return math.Pow(v, p) }, backPow)
	if y != nil && y.a == x {
		y.s = p
	}
	return y
}

func backPow(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	p := y.s
	for i, gy := range y.grad {
		g[i] += gy * p * math.Pow(y.a.val[i], p-1)
	}
}

// Scale returns c·x for a constant c.
func Scale(x *Var, c float64) *Var {
	y := unary("Scale", x, func(v float64) float64 { return c * v }, backScale)
	if y != nil && y.a == x {
		y.s = c
	}
	return y
}

func backScale(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	gy, c := y.grad, y.s
	if len(gy) <= par.Grain {
		addScaled(g, gy, c)
	} else {
		par.Range(len(gy), par.Grain, func(lo, hi int) { addScaled(g[lo:hi], gy[lo:hi], c) })
	}
}

// AddConst returns x + c for a constant c.
func AddConst(x *Var, c float64) *Var {
	return unary("AddConst", x, func(v float64) float64 { return v + c }, backIdentity)
}

func backIdentity(y *Var) {
	if !y.a.needGrad {
		return
	}
	// A fresh adjoint is written as 0 + v (a −0 turned into +0, as adding
	// to a zeroed buffer would), without zeroing it first.
	g, acc := y.a.gradOut()
	gy := y.grad
	if len(gy) <= par.Grain {
		addTo(g, gy, !acc)
	} else {
		par.Range(len(gy), par.Grain, func(lo, hi int) { addTo(g[lo:hi], gy[lo:hi], !acc) })
	}
}
