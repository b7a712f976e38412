package relax

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// decodeMatchingInput turns fuzz bytes into a small assignment problem.
//
//	data[0]: n = 1 + data[0]%7
//	data[1]: flags: bit 0 use a mask, bit 1 fractional values,
//	         bit 2 scale by 2^1000, bit 3 scale by 2^-1000
//	then one byte per entry, row-major (missing bytes read as 0):
//	  255 -> -Inf, 254 -> masked out (if the mask is on), 253 -> NaN,
//	  otherwise a small integer b%9-4 (or (b-126)/8 with bit 1).
//
// Integer values make ties common; all sums stay exact, also after a
// power-of-two scaling.
func decodeMatchingInput(data []byte) (x *mat.Dense, mask *perm.Mask, hasNaN bool) {
	at := func(k int) byte {
		if k < len(data) {
			return data[k]
		}
		return 0
	}
	n := 1 + int(at(0))%7
	flags := at(1)
	if flags&1 != 0 {
		mask, _ = perm.FullMask(n)
	}
	scale := 1.0
	switch {
	case flags&4 != 0:
		scale = math.Ldexp(1, 1000)
	case flags&8 != 0:
		scale = math.Ldexp(1, -1000)
	}
	x = mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			b := at(2 + i*n + j)
			var v float64
			switch {
			case b == 255:
				v = math.Inf(-1)
			case b == 254 && mask != nil:
				_ = mask.Set(i, j, false)
			case b == 253:
				v = math.NaN()
				hasNaN = true
			case flags&2 != 0:
				v = (float64(b) - 126) / 8
			default:
				v = float64(int(b)%9 - 4)
			}
			x.Set(i, j, v*scale)
		}
	}
	return x, mask, hasNaN
}

func FuzzMatching(f *testing.F) {
	f.Add([]byte{0, 0, 7})
	f.Add([]byte{2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 1, 254, 254, 1, 2, 254, 254, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{4, 0, 255, 255, 255, 255, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24})
	f.Add([]byte{5, 2, 10, 200, 30, 100, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180})
	f.Add([]byte{6, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{6, 9, 254, 1, 2, 254, 3, 4, 255, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{1, 0, 253, 1, 2, 3})
	f.Add([]byte{2, 1, 1, 1, 1, 254, 254, 254, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		x, mask, hasNaN := decodeMatchingInput(data)
		n, _ := x.Dims()
		p, err := MatchingMasked(x, mask)
		if hasNaN {
			// A NaN is an error unless the mask hides it.
			nanUsed := false
			for i := range n {
				for j := range n {
					if math.IsNaN(x.At(i, j)) && (mask == nil || mask.Allowed(i, j)) {
						nanUsed = true
					}
				}
			}
			if nanUsed {
				if err == nil {
					t.Fatalf("NaN input: no error, got %v", p)
				}
				return
			}
			// Hidden NaNs: compare against brute force on a copy without
			// them (the mask excludes those entries anyway).
			for i := range n {
				for j := range n {
					if math.IsNaN(x.At(i, j)) {
						x.Set(i, j, 0)
					}
				}
			}
		}
		want, feasible := bruteMatch(n, x.RawMatrix().Data, mask)
		if !feasible {
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("infeasible problem: got %v, %v\n%v", p, err, mat.Formatted(x))
			}
			return
		}
		if err != nil {
			t.Fatalf("feasible problem (optimum %v): %v\n%v", want, err, mat.Formatted(x))
		}
		got := checkSolution(t, x, mask, p)
		// All values are multiples of 2^k with few significant bits, so
		// sums are exact unless they overflow; compare exactly.
		if got != want {
			t.Fatalf("objective %v, brute force %v, p=%v\n%v", got, want, p, mat.Formatted(x))
		}
	})
}
