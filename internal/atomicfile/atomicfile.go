// Package atomicfile replaces a file so that a crash at any moment leaves
// either the old contents or the new ones, never a mixture: the data go to
// a temporary file in the same directory, which is synced and renamed over
// the target, and the directory is synced to make the rename durable.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with what write produces. The file gets the
// permissions os.Create would give it (0644 before the umask).
func Write(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	// CreateTemp makes the file private; give it os.Create's permissions.
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}

// WriteFile replaces path with data.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
