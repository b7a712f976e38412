package paramfile

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
)

func TestSet(t *testing.T) {
	ps := []*ad.Param{ad.NewParam("a", ad.Zeros(2)), ad.NewParam("b", ad.Zeros(1))}
	names, values := Values(ps)
	assert.Equal(t, []string{"a", "b"}, names)
	assert.Equal(t, 3, Count(values))

	require.NoError(t, Set(ps, []string{"a", "b"}, [][]float64{{1, 2}, {3}}))
	assert.Equal(t, []float64{1, 2}, ps[0].Value.Data)
	assert.Equal(t, []float64{3}, ps[1].Value.Data)

	for _, c := range []struct {
		names  []string
		values [][]float64
		msg    string
	}{
		{[]string{"a"}, [][]float64{{1, 2}}, "1 parameters, want 2"},
		{[]string{"a", "c"}, [][]float64{{1, 2}, {3}}, `parameter 1 is "b" of 1 values, the file has "c" of 1`},
		{[]string{"a", "b"}, [][]float64{{1, 2}, {3, 4}}, `the file has "b" of 2`},
		{[]string{"a", "b"}, [][]float64{{9, 9}, {math.NaN()}}, `parameter "b" holds NaN`},
	} {
		assert.ErrorContains(t, Set(ps, c.names, c.values), c.msg)
		assert.Equal(t, []float64{1, 2}, ps[0].Value.Data, "a failed Set copied values")
	}
}

func TestSaturating(t *testing.T) {
	assert.Equal(t, 12, Mul(3, 4))
	assert.Equal(t, 0, Mul(0, math.MaxInt))
	assert.Equal(t, math.MaxInt, Mul(math.MaxInt/2+1, 2))
	assert.Equal(t, math.MaxInt, Mul(-1, 2))
	assert.Equal(t, 7, Add(3, 4))
	assert.Equal(t, math.MaxInt, Add(math.MaxInt, 1))
	assert.Equal(t, math.MaxInt, Add(1, -1))
	assert.Equal(t, 3*5+5, DenseWeights(3, 5, true))
	assert.Equal(t, 15, DenseWeights(3, 5, false))
	assert.Equal(t, math.MaxInt, DenseWeights(math.MaxInt, 2, true))
}
