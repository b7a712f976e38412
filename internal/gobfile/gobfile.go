// Package gobfile keeps one gob-encoded value in a file, replaced atomically:
// the checkpoint files of vi, nn/train and networks/jigsaw.
package gobfile

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/permlab/permlab/internal/atomicfile"
)

// Write encodes v into the file at path, so that a crash at any moment
// leaves the old file or the new one (see package atomicfile).
func Write(path string, v any) error {
	return atomicfile.Write(path, func(w io.Writer) error { return gob.NewEncoder(w).Encode(v) })
}

// Read decodes the file at path into v, which must be a pointer. It returns
// false and no error when there is no such file; a file that cannot be read
// or decoded is an error naming it.
func Read(path string, v any) (found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return true, fmt.Errorf("%s is unreadable: %w", path, err)
	}
	return true, nil
}
