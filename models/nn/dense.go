package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/permlab/permlab/ad"
)

// Option configures a layer at construction.
type Option func(*options)

type options struct {
	noBias bool
}

// NoBias builds a layer without a bias term (B is nil).
func NoBias() Option { return func(o *options) { o.noBias = true } }

func buildOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// Dense is the affine map y = x·W + b on the last axis: an input of shape
// (…, In) gives an output of shape (…, Out), the same W of shape (In, Out)
// and b of shape (Out) applied to every row. B is nil for a layer built
// with NoBias.
type Dense struct {
	W, B    *ad.Param
	In, Out int
}

// NewDense returns a dense layer from in to out units with weights drawn
// from init (fan-in in, fan-out out) and a zero bias. Its parameters are
// named name+".W" and name+".b".
func NewDense(rng *rand.Rand, name string, in, out int, init Init, opts ...Option) (*Dense, error) {
	if in < 1 || out < 1 {
		return nil, fmt.Errorf("nn: NewDense %q: sizes %d→%d must be >= 1", name, in, out)
	}
	w := ad.Zeros(in, out)
	if err := init.Fill(rng, w.Data, in, out); err != nil {
		return nil, fmt.Errorf("nn: NewDense %q: %w", name, err)
	}
	d := &Dense{W: ad.NewParam(name+".W", w), In: in, Out: out}
	if !buildOptions(opts).noBias {
		d.B = ad.NewParam(name+".b", ad.Zeros(out))
	}
	return d, nil
}

// Forward returns x·W + b for x of shape (…, In).
func (d *Dense) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	if d.W == nil || !slices.Equal(d.W.Value.Shape, []int{d.In, d.Out}) || (d.B != nil && !slices.Equal(d.B.Value.Shape, []int{d.Out})) {
		return fail(t, "Dense: invalid layer: want W (%d, %d) and B (%d)", d.In, d.Out, d.Out)
	}
	sh := x.Shape()
	if len(sh) == 0 || sh[len(sh)-1] != d.In {
		return fail(t, "Dense: want input shape (…, %d), got %v", d.In, sh)
	}
	var b *ad.Var
	if d.B != nil {
		b = t.Param(d.B)
	}
	return dense(x, t.Param(d.W), b)
}

// dense records x·w + b on the last axis of x, whose shape the caller has
// checked against w (In, Out); b (Out) may be nil.
func dense(x, w, b *ad.Var) *ad.Var {
	sh := x.Shape()
	in, out := w.Shape()[0], w.Shape()[1]
	var y *ad.Var
	switch len(sh) {
	case 2, 3:
		y = ad.MatMul(x, w)
	default:
		outShape := append(append([]int(nil), sh[:len(sh)-1]...), out)
		y = ad.Reshape(ad.MatMul(ad.Reshape(x, -1, in), w), outShape...)
	}
	if b != nil {
		y = ad.Add(y, b)
	}
	return y
}

// Params returns W and, unless the layer has no bias, B.
func (d *Dense) Params() []*ad.Param {
	if d.B == nil {
		return []*ad.Param{d.W}
	}
	return []*ad.Param{d.W, d.B}
}
