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
	noBias    bool
	precision Precision
}

// NoBias builds a layer without a bias term (B is nil).
func NoBias() Option { return func(o *options) { o.noBias = true } }

// WithPrecision builds a dense layer whose product runs in precision p.
func WithPrecision(p Precision) Option { return func(o *options) { o.precision = p } }

// Precision selects the arithmetic of a dense layer's matrix product.
type Precision int

const (
	// Float64 computes x·W in float64 (ad.MatMul), the default.
	Float64 Precision = iota
	// Float32 computes x·W and its adjoints in float32 (ad.MatMul32): about
	// twice as fast where the CPU has AVX2 and FMA. Inputs, outputs,
	// gradients and the parameters themselves stay float64.
	Float32
)

// Valid reports whether p is Float64 or Float32.
func (p Precision) Valid() bool { return p == Float64 || p == Float32 }

// String returns "float64" or "float32".
func (p Precision) String() string {
	switch p {
	case Float64:
		return "float64"
	case Float32:
		return "float32"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision returns the precision named s ("float64" or "float32").
func ParsePrecision(s string) (Precision, error) {
	for _, p := range []Precision{Float64, Float32} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("nn: unknown precision %q (want float64 or float32)", s)
}

// MarshalText encodes p by its name, so that configurations read as text.
func (p Precision) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("nn: cannot encode %v", p)
	}
	return []byte(p.String()), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (p *Precision) UnmarshalText(b []byte) error {
	q, err := ParsePrecision(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

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
// with NoBias. Precision selects the arithmetic of the product x·W (its
// zero value is Float64); it may be changed between steps.
type Dense struct {
	W, B      *ad.Param
	In, Out   int
	Precision Precision
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
	o := buildOptions(opts)
	if !o.precision.Valid() {
		return nil, fmt.Errorf("nn: NewDense %q: unknown %v", name, o.precision)
	}
	d := &Dense{W: ad.NewParam(name+".W", w), In: in, Out: out, Precision: o.precision}
	if !o.noBias {
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
	if !d.Precision.Valid() {
		return fail(t, "Dense: unknown %v", d.Precision)
	}
	sh := x.Shape()
	if len(sh) == 0 || sh[len(sh)-1] != d.In {
		return fail(t, "Dense: want input shape (…, %d), got %v", d.In, sh)
	}
	var b *ad.Var
	if d.B != nil {
		b = t.Param(d.B)
	}
	return dense(x, t.Param(d.W), b, d.Precision)
}

// dense records x·w + b on the last axis of x, whose shape the caller has
// checked against w (In, Out); b (Out) may be nil.
func dense(x, w, b *ad.Var, p Precision) *ad.Var {
	sh := x.Shape()
	in, out := w.Shape()[0], w.Shape()[1]
	mul := ad.MatMul
	if p == Float32 {
		mul = ad.MatMul32
	}
	var y *ad.Var
	switch len(sh) {
	case 2, 3:
		y = mul(x, w)
	default:
		outShape := append(append([]int(nil), sh[:len(sh)-1]...), out)
		y = ad.Reshape(mul(ad.Reshape(x, -1, in), w), outShape...)
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
