// Package jsonl keeps results as JSON lines, one value per line, appended as
// runs finish, so that a reproduction that is interrupted loses at most the
// run in progress and resumes from what the file holds.
//
// A process killed during an append can leave a last line cut short: one
// without its newline that is not complete JSON. Read skips such a line;
// Append first cuts it off, so that the new value starts a line of its own.
// A last line that is complete JSON but lacks its newline (the append was
// cut between the value and the newline, or the file was edited by hand) is
// a value: Read returns it and Append ends it with the missing newline
// rather than cutting it off. Any other line that does not parse is an
// error naming the file and line: it is damage, not an interrupted append.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Read returns the values of the file, in order. A missing file holds no
// values.
func Read[T any](path string) ([]T, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			torn := !json.Valid(sc.Bytes()) // before Scan reuses the buffer
			if torn && !sc.Scan() && data[len(data)-1] != '\n' {
				break // the last line, cut short by an interrupted append
			}
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// Append writes v as one line at the end of path, creating the file and its
// directory when needed, and syncs it.
func Append(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := TrimTorn(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TrimTorn cuts path after its last newline, dropping the start of a line
// whose append was interrupted. A missing or empty file, or one that ends
// in a newline, is left as it is; only then is the file read. A last line
// that is complete JSON is a value that lacks only its newline (see Read):
// TrimTorn adds the newline instead of dropping the value.
func TrimTorn(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cut := bytes.LastIndexByte(data, '\n') + 1
	if json.Valid(data[cut:]) {
		return appendNewline(path)
	}
	return os.Truncate(path, int64(cut))
}

// appendNewline ends the file at path with a newline and syncs it.
func appendNewline(path string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte{'\n'})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
