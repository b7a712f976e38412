package ad

import (
	"errors"
	"fmt"
	"math"

	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/internal/par"
)

// Param is a persistent trainable tensor. Backward adds ∂loss/∂Value into
// Grad; optimizers in package optim read Grad, update Value and zero Grad.
type Param struct {
	Name  string
	Value *Tensor
	Grad  *Tensor
}

// NewParam returns a parameter holding value (not copied) and a zero
// gradient of the same shape.
func NewParam(name string, value *Tensor) *Param {
	return &Param{Name: name, Value: value, Grad: &Tensor{Shape: append([]int(nil), value.Shape...), Data: make([]float64, len(value.Data))}}
}

// ZeroGrad sets the accumulated gradient to zero.
func (p *Param) ZeroGrad() {
	clear(p.Grad.Data)
}

// Var is a value recorded on a Tape. Its value is computed when the op that
// makes it is called; its adjoint (gradient of the loss with respect to it)
// is available after Tape.Backward.
type Var struct {
	tape     *Tape
	shape    []int
	shapeBuf [4]int
	val      []float64
	grad     []float64
	needGrad bool
	ownVal   bool // val came from the tape's pool

	back  func(v *Var) // adjoint rule; nil for leaves
	a, b  *Var         // inputs of built-in ops
	s     float64      // scalar parameter of built-in ops
	axis  int          // axis parameter
	ints  []int        // index parameter (Take, Gather)
	mask  []bool       // Mask parameter
	ins   []*Var       // inputs of custom ops and Concat
	cback func(gOut []float64, gIn [][]float64)
	param *Param
}

// Shape returns the shape of v. The slice must not be modified.
func (v *Var) Shape() []int { return v.shape }

// Size returns the number of elements of v.
func (v *Var) Size() int { return len(v.val) }

// Value returns the value of v, row-major. The slice is owned by the tape
// and is reused after Reset; copy it to keep it.
func (v *Var) Value() []float64 { return v.val }

// Grad returns the adjoint of v after Backward, or nil when no gradient
// reached v. The slice is owned by the tape.
func (v *Var) Grad() []float64 { return v.grad }

// Item returns the first element of v; for a scalar, its value.
func (v *Var) Item() float64 {
	if len(v.val) == 0 {
		return math.NaN()
	}
	return v.val[0]
}

// Tensor returns a copy of the value of v.
func (v *Var) Tensor() *Tensor {
	return &Tensor{Shape: append([]int(nil), v.shape...), Data: append([]float64(nil), v.val...)}
}

// Tape returns the tape v is recorded on.
func (v *Var) Tape() *Tape { return v.tape }

// RequiresGrad reports whether a gradient flows to v from some Param or
// Variable leaf.
func (v *Var) RequiresGrad() bool { return v.needGrad }

// Tape records operations for reverse-mode differentiation. A Tape is not
// safe for concurrent use; use one tape per goroutine.
type Tape struct {
	nodes []*Var
	free  []*Var
	pool  map[int][][]float64
	used  [][]float64
	err   error
	dead  *Var
}

// NewTape returns an empty tape.
func NewTape() *Tape {
	return &Tape{pool: make(map[int][][]float64)}
}

// Err returns the first error recorded by an op, or nil.
func (t *Tape) Err() error { return t.err }

// Fail records err as the tape's error if none is recorded yet. Custom ops
// use it to report invalid input; every later op becomes a no-op.
func (t *Tape) Fail(err error) {
	if t.err == nil && err != nil {
		t.err = err
	}
}

func (t *Tape) failf(format string, args ...any) *Var {
	t.Fail(fmt.Errorf("ad: "+format, args...))
	return t.deadVar()
}

// deadVar is returned by ops once the tape holds an error.
func (t *Tape) deadVar() *Var {
	if t.dead == nil {
		t.dead = &Var{tape: t, val: []float64{math.NaN()}}
		t.dead.shape = t.dead.shapeBuf[:0]
	}
	return t.dead
}

// Reset forgets every recorded op and the error, returning all value and
// adjoint buffers to the tape's pool for reuse. Vars from before the reset
// must not be used afterwards.
func (t *Tape) Reset() {
	for _, buf := range t.used {
		t.pool[len(buf)] = append(t.pool[len(buf)], buf)
	}
	t.used = t.used[:0]
	for _, v := range t.nodes {
		*v = Var{}
		t.free = append(t.free, v)
	}
	t.nodes = t.nodes[:0]
	t.err = nil
}

// Alloc returns a zeroed buffer of length n owned by the tape; it returns to
// the pool on Reset. Custom ops use it for their values and saved state.
func (t *Tape) Alloc(n int) []float64 {
	buf := t.allocRaw(n)
	if n <= par.Grain {
		clear(buf)
	} else {
		par.Range(n, par.Grain, func(lo, hi int) { clear(buf[lo:hi]) })
	}
	return buf
}

// AllocRaw is Alloc without the zeroing: the buffer holds whatever its
// previous user left in it. It saves a pass over memory for values and
// saved state that an op overwrites entirely before anything reads them.
func (t *Tape) AllocRaw(n int) []float64 { return t.allocRaw(n) }

// allocRaw returns a pooled buffer of length n with arbitrary contents.
func (t *Tape) allocRaw(n int) []float64 {
	var buf []float64
	if list := t.pool[n]; len(list) > 0 {
		buf = list[len(list)-1]
		t.pool[n] = list[:len(list)-1]
	} else {
		buf = make([]float64, n)
	}
	t.used = append(t.used, buf)
	return buf
}

func (t *Tape) newNode(shape []int) *Var {
	var v *Var
	if k := len(t.free); k > 0 {
		v = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		v = new(Var)
	}
	v.tape = t
	if len(shape) <= len(v.shapeBuf) {
		v.shape = append(v.shapeBuf[:0], shape...)
	} else {
		v.shape = append([]int(nil), shape...)
	}
	t.nodes = append(t.nodes, v)
	return v
}

// newOp records an op node with a fresh value buffer (contents arbitrary).
func (t *Tape) newOp(shape []int, back func(*Var), inputs ...*Var) *Var {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := t.newNode(shape)
	v.val = t.allocRaw(n)
	v.ownVal = true
	for _, in := range inputs {
		if in.needGrad {
			v.needGrad = true
		}
	}
	if v.needGrad {
		v.back = back
	}
	return v
}

// Const records x as a constant: no gradient flows to it. The data is not
// copied and must not change while the tape is in use.
func (t *Tape) Const(x *Tensor) *Var {
	if x == nil {
		return t.failf("Const: nil tensor")
	}
	if n, err := shapeSize(x.Shape); err != nil || n != len(x.Data) {
		return t.failf("Const: shape %v does not match %d values", x.Shape, len(x.Data))
	}
	v := t.newNode(x.Shape)
	v.val = x.Data
	return v
}

// ConstScalar records the constant c as a scalar.
func (t *Tape) ConstScalar(c float64) *Var {
	v := t.newNode(nil)
	v.val = t.allocRaw(1)
	v.val[0] = c
	return v
}

// Variable records x as a differentiable leaf; after Backward its adjoint is
// in Grad of the returned Var. The data is not copied.
func (t *Tape) Variable(x *Tensor) *Var {
	v := t.Const(x)
	if t.err == nil {
		v.needGrad = true
	}
	return v
}

// Param records p on the tape as a differentiable leaf; Backward adds its
// adjoint into p.Grad.
func (t *Tape) Param(p *Param) *Var {
	if p == nil || p.Value == nil {
		return t.failf("Param: nil parameter")
	}
	v := t.Variable(p.Value)
	if t.err == nil {
		if p.Grad == nil || len(p.Grad.Data) != len(p.Value.Data) {
			p.Grad = &Tensor{Shape: append([]int(nil), p.Value.Shape...), Data: make([]float64, len(p.Value.Data))}
		}
		v.param = p
	}
	return v
}

// gradBuf returns the adjoint buffer of v, allocating a zeroed one on first
// use.
func (v *Var) gradBuf() []float64 {
	if v.grad == nil {
		v.grad = v.tape.Alloc(len(v.val))
	}
	return v.grad
}

// gradOut returns the adjoint buffer of v for an op that writes every
// entry of it, and whether the op must add to it (acc). On first use the
// buffer is taken from the pool without zeroing and acc is false: the op
// stores its result, which is the sum it would have added to zeros, bit
// for bit, as long as its sums start from +0 (a running sum from +0 never
// turns into −0, so 0 + s = s exactly).
func (v *Var) gradOut() (buf []float64, acc bool) {
	if v.grad == nil {
		v.grad = v.tape.allocRaw(len(v.val))
		return v.grad, false
	}
	return v.grad, true
}

// ErrNotScalar is returned by Backward when the loss has more than one
// element.
var ErrNotScalar = errors.New("ad: Backward: loss must have exactly one element")

// Backward computes the adjoint of every recorded value with respect to
// loss, which must be a scalar on this tape, and adds the adjoints of Param
// leaves into their Grad. It returns the tape's error if any op failed.
// Backward may be called once per recorded graph.
func (t *Tape) Backward(loss *Var) error {
	if t.err != nil {
		return t.err
	}
	if loss == nil || loss.tape != t {
		return errors.New("ad: Backward: loss is nil or from another tape")
	}
	if len(loss.val) != 1 {
		return ErrNotScalar
	}
	if !loss.needGrad {
		return nil
	}
	loss.gradBuf()[0] += 1
	for k := len(t.nodes) - 1; k >= 0; k-- {
		v := t.nodes[k]
		if v.grad == nil {
			continue
		}
		if v.back != nil {
			v.back(v)
		}
		if v.param != nil {
			addGrad(v.param.Grad.Data, v.grad)
		}
	}
	return t.err
}

// addGrad sets g += x entry by entry. g += 1·x with fused multiply-adds
// is g + x rounded once, the plain sum's bits, four entries per
// instruction; a large gradient is split over goroutines in chunks, which
// does not change a bit.
func addGrad(g, x []float64) {
	const chunk = 1 << 15
	if len(x) < 2*chunk {
		f64.Axpy(1, x, g)
		return
	}
	g = g[:len(x)]
	parallelFor((len(x)+chunk-1)/chunk, func(i int) {
		lo, hi := i*chunk, min((i+1)*chunk, len(x))
		f64.Axpy(1, x[lo:hi], g[lo:hi])
	})
}

// Len returns the number of recorded values (ops and leaves).
func (t *Tape) Len() int { return len(t.nodes) }

// check validates that every input is a live Var of this tape. It returns
// false (and records an error) otherwise.
func (t *Tape) check(op string, vs ...*Var) bool {
	if t.err != nil {
		return false
	}
	for _, v := range vs {
		if v == nil {
			t.failf("%s: nil input", op)
			return false
		}
		if v.tape != t {
			t.failf("%s: inputs come from different tapes", op)
			return false
		}
	}
	return true
}

// tapeOf returns the tape of the first non-nil Var.
func tapeOf(vs ...*Var) *Tape {
	for _, v := range vs {
		if v != nil && v.tape != nil {
			return v.tape
		}
	}
	return nil
}
