package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/models/jigsaw"
)

func TestNoDataIsAnError(t *testing.T) {
	err := run(context.Background(), options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-mnist DIR")
}

func TestFormatRates(t *testing.T) {
	r := &jigsaw.AssemblyResult{Rates: [][]float64{{1, 0.25}, {0.5, 1}}, Counts: []int{4, 2}, Overall: 0.75}
	s := formatRates(r)
	lines := strings.Split(s, "\n")
	assert.Equal(t, "| actual \\ becomes | 0 | 1 |", lines[0])
	assert.Equal(t, "| 0 | 1.00 | 0.25 |", lines[2])
	assert.Equal(t, "| 1 | 0.50 | 1.00 |", lines[3])
	assert.Contains(t, s, "overall: 0.7500 (paper: 0.851)")
}
