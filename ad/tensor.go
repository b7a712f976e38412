package ad

import (
	"fmt"
	"math"
)

// Tensor is a dense, row-major array of float64 with a shape.
// A scalar has an empty shape and one element.
type Tensor struct {
	Shape []int
	Data  []float64
}

// NewTensor returns a tensor with the given shape and data. The data is used
// as is (not copied). It returns an error when len(data) differs from the
// product of shape or a dimension is negative.
func NewTensor(shape []int, data []float64) (*Tensor, error) {
	n, err := shapeSize(shape)
	if err != nil {
		return nil, err
	}
	if len(data) != n {
		return nil, fmt.Errorf("ad: NewTensor: shape %v needs %d values, got %d", shape, n, len(data))
	}
	return &Tensor{Shape: append([]int(nil), shape...), Data: data}, nil
}

// Zeros returns a zero tensor of the given shape. A shape with a negative
// dimension gives a tensor with no data, which every op rejects with an
// error (Tape.Const and NewTensor report the bad shape).
func Zeros(shape ...int) *Tensor {
	n, err := shapeSize(shape)
	if err != nil {
		n = 0
	}
	return &Tensor{Shape: append([]int(nil), shape...), Data: make([]float64, n)}
}

// Scalar returns a scalar tensor holding v.
func Scalar(v float64) *Tensor { return &Tensor{Shape: []int{}, Data: []float64{v}} }

// Size returns the number of elements.
func (t *Tensor) Size() int { return len(t.Data) }

// Clone returns a deep copy of t.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{Shape: append([]int(nil), t.Shape...), Data: append([]float64(nil), t.Data...)}
}

// HasNaN reports whether any element is NaN or infinite.
func (t *Tensor) HasNaN() bool {
	for _, v := range t.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return true
		}
	}
	return false
}

func shapeSize(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("ad: negative dimension in shape %v", shape)
		}
		n *= d
	}
	return n, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
