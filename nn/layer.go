package nn

import (
	"fmt"

	"github.com/permlab/permlab/ad"
)

// Layer is a differentiable map with trainable parameters.
//
// Forward records the map on x's tape and returns the output. A Layer never
// panics on bad input: a wrong shape is recorded as the tape's error (see
// ad.Tape.Fail) and Forward returns a placeholder Var, so model code can
// check the tape once, after the loss.
type Layer interface {
	Forward(t *ad.Tape, x *ad.Var) *ad.Var
	Params() []*ad.Param
}

// Sequential is a stack of layers applied in order.
//
// A Conv2D followed by a ReLU and a MaxPool2D (in either order), and by a
// Flatten if one comes next, is recorded as one fused op that never stores
// the convolution's output. Its values are those of the layers run one by
// one, and so are its gradients up to the order of some sums (see fused.go
// for the argument); it is several times faster.
type Sequential []Layer

// Forward applies the layers in order.
func (s Sequential) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	for i := 0; i < len(s); i++ {
		if y, used := fuseConvPool(t, s[i:], x); used > 0 {
			x = y
			i += used - 1
			continue
		}
		x = s[i].Forward(t, x)
	}
	return x
}

// Params returns the parameters of every layer, in layer order.
func (s Sequential) Params() []*ad.Param { return Collect(s...) }

// Collect returns the parameters of the given layers concatenated in order,
// ready for an optimizer or for Save.
func Collect(layers ...Layer) []*ad.Param {
	var ps []*ad.Param
	for _, l := range layers {
		if l != nil {
			ps = append(ps, l.Params()...)
		}
	}
	return ps
}

// Flatten reshapes (N, d1, …, dr) to (N, d1·…·dr), keeping the leading
// (batch) axis. It has no parameters.
type Flatten struct{}

// Forward returns x reshaped to (N, −1).
func (Flatten) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	sh := x.Shape()
	if len(sh) < 1 {
		return fail(t, "Flatten: want rank >= 1, got shape %v", sh)
	}
	if len(sh) == 2 {
		return x
	}
	n := sh[0]
	if n == 0 {
		return ad.Reshape(x, 0, 0)
	}
	return ad.Reshape(x, n, x.Size()/n)
}

// Params returns nil: Flatten has no parameters.
func (Flatten) Params() []*ad.Param { return nil }

// ready reports whether Forward may proceed: x is on t and t holds no error.
// It records an error when x is nil or on another tape.
func ready(t *ad.Tape, x *ad.Var) bool {
	if t == nil {
		return false
	}
	if t.Err() != nil {
		return false
	}
	if x == nil {
		t.Fail(fmt.Errorf("nn: Forward: nil input"))
		return false
	}
	if x.Tape() != t {
		t.Fail(fmt.Errorf("nn: Forward: input is recorded on another tape"))
		return false
	}
	return true
}

// fail records an "nn: "-prefixed error on t and returns the tape's
// placeholder Var.
func fail(t *ad.Tape, format string, args ...any) *ad.Var {
	if t == nil {
		return nil
	}
	t.Fail(fmt.Errorf("nn: "+format, args...))
	return dead(t)
}

// dead returns the placeholder Var that ops return once t holds an error.
func dead(t *ad.Tape) *ad.Var {
	if t == nil {
		return nil
	}
	if t.Err() == nil {
		t.Fail(fmt.Errorf("nn: invalid input"))
	}
	// Custom on a failed tape records nothing and returns the dead Var.
	return t.Custom(nil, nil, nil, nil)
}
