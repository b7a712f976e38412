package gobfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type state struct {
	Step   int
	Values []float64
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.gob")
	var got state
	found, err := Read(path, &got)
	require.NoError(t, err, "a missing file is not an error")
	assert.False(t, found)

	want := state{Step: 3, Values: []float64{1.5, -2}}
	require.NoError(t, Write(path, want))
	want.Step = 4
	require.NoError(t, Write(path, want), "replaces the file")
	found, err = Read(path, &got)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, want, got)

	require.NoError(t, os.WriteFile(path, []byte("not gob"), 0o644))
	_, err = Read(path, &got)
	assert.ErrorContains(t, err, path+" is unreadable")
	_, err = Read(t.TempDir(), &got)
	assert.Error(t, err, "a folder is not a file")
}
