package ad

// CustomBackward is the adjoint rule of a custom op: given the adjoint of the
// output, gOut, it adds the contribution to each input's adjoint in gIn.
// gIn[k] is nil for inputs that need no gradient.
type CustomBackward func(gOut []float64, gIn [][]float64)

// Custom records a fused op whose value the caller has computed. value must
// have as many elements as shape implies; allocate it with Tape.Alloc to have
// it pooled. backward is called during Backward with the output's adjoint.
// Custom returns the tape's dead Var (and records an error) if the inputs are
// invalid or value has the wrong length.
func (t *Tape) Custom(shape []int, value []float64, inputs []*Var, backward CustomBackward) *Var {
	if !t.check("Custom", inputs...) {
		return t.deadVar()
	}
	n, err := shapeSize(shape)
	if err != nil || n != len(value) {
		return t.failf("Custom: shape %v does not match %d values", shape, len(value))
	}
	v := t.newNode(shape)
	v.val = value
	for _, in := range inputs {
		if in.needGrad {
			v.needGrad = true
		}
	}
	if v.needGrad {
		v.ins = append([]*Var(nil), inputs...)
		v.cback = backward
		v.back = backCustom
	}
	return v
}

func backCustom(y *Var) {
	gIn := make([][]float64, len(y.ins))
	for k, in := range y.ins {
		if in.needGrad {
			gIn[k] = in.gradBuf()
		}
	}
	y.cback(y.grad, gIn)
}
