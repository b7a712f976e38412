package nn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/atomicfile"
)

// File format constants; see the package documentation.
const (
	fileMagic   = "PLNN"
	fileVersion = 1
	maxRank     = 16
	maxNameLen  = 1 << 16
)

// ErrCorrupt is wrapped by the errors Load returns for a file that is not
// a well-formed parameter file: wrong magic, unknown version, truncated, or
// a checksum that does not match.
var ErrCorrupt = errors.New("nn: corrupt parameter file")

// Save writes the values of params to w in the format described in the
// package documentation. Names must be unique. Save checks every param
// before it writes anything.
func Save(w io.Writer, params []*ad.Param) error {
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		if p == nil || p.Value == nil {
			return fmt.Errorf("nn: Save: param %d is nil", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("nn: Save: duplicate param name %q", p.Name)
		}
		seen[p.Name] = true
		if len(p.Name) > maxNameLen || len(p.Value.Shape) > maxRank {
			return fmt.Errorf("nn: Save: param %q: name longer than %d bytes or rank above %d", p.Name, maxNameLen, maxRank)
		}
		if n, ok := sizeOf(p.Value.Shape); !ok || n != len(p.Value.Data) {
			return fmt.Errorf("nn: Save: param %q: shape %v does not match %d values", p.Name, p.Value.Shape, len(p.Value.Data))
		}
	}
	bw := bufio.NewWriter(w)
	sum := crc32.NewIEEE()
	out := io.MultiWriter(bw, sum) // bufio.Writer's errors are sticky
	le := binary.LittleEndian
	buf := make([]byte, 0, 4096)
	buf = append(buf, fileMagic...)
	buf = le.AppendUint32(buf, fileVersion)
	buf = le.AppendUint32(buf, uint32(len(params)))
	for _, p := range params {
		buf = le.AppendUint32(buf, uint32(len(p.Name)))
		buf = append(buf, p.Name...)
		buf = le.AppendUint32(buf, uint32(len(p.Value.Shape)))
		for _, d := range p.Value.Shape {
			buf = le.AppendUint64(buf, uint64(d))
		}
		for _, v := range p.Value.Data {
			if len(buf)+8 > cap(buf) {
				out.Write(buf)
				buf = buf[:0]
			}
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
	}
	out.Write(buf)
	bw.Write(le.AppendUint32(buf[:0], sum.Sum32()))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("nn: Save: %w", err)
	}
	return nil
}

// Load reads a parameter file from r into params. Every param must appear
// in the file under its name with exactly its shape, and the file must hold
// no other params; otherwise Load returns an error naming the param and
// leaves every value unchanged. Malformed files give an error wrapping
// ErrCorrupt.
func Load(r io.Reader, params []*ad.Param) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("nn: Load: %w", err)
	}
	file, err := decode(data)
	if err != nil {
		return err
	}
	want := make(map[string]*ad.Param, len(params))
	for i, p := range params {
		if p == nil || p.Value == nil {
			return fmt.Errorf("nn: Load: param %d is nil", i)
		}
		if want[p.Name] != nil {
			return fmt.Errorf("nn: Load: duplicate param name %q", p.Name)
		}
		want[p.Name] = p
	}
	for _, f := range file {
		p := want[f.name]
		if p == nil {
			return fmt.Errorf("nn: Load: file holds param %q, which the model lacks", f.name)
		}
		if !slices.Equal(p.Value.Shape, f.shape) || len(p.Value.Data) != len(f.data) {
			return fmt.Errorf("nn: Load: param %q has shape %v in the file, %v in the model", f.name, f.shape, p.Value.Shape)
		}
	}
	if len(file) != len(want) {
		for _, p := range params {
			if !slices.ContainsFunc(file, func(f savedParam) bool { return f.name == p.Name }) {
				return fmt.Errorf("nn: Load: param %q is missing from the file", p.Name)
			}
		}
	}
	for _, f := range file {
		copy(want[f.name].Value.Data, f.data)
	}
	return nil
}

type savedParam struct {
	name  string
	shape []int
	data  []float64
}

// decode checks the framing and checksum of a parameter file and returns
// its params.
func decode(data []byte) ([]savedParam, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	le := binary.LittleEndian
	if len(data) < len(fileMagic)+12 {
		return nil, corrupt("%d bytes is too short", len(data))
	}
	if string(data[:len(fileMagic)]) != fileMagic {
		return nil, corrupt("bad magic %q", data[:len(fileMagic)])
	}
	if v := le.Uint32(data[4:]); v != fileVersion {
		return nil, corrupt("unsupported version %d (want %d)", v, fileVersion)
	}
	body, sum := data[:len(data)-4], le.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, corrupt("checksum mismatch")
	}
	r := reader{buf: body[8:]}
	count := r.u32()
	var out []savedParam
	for i := uint32(0); i < count && r.err == nil; i++ {
		nameLen := r.u32()
		if nameLen > maxNameLen {
			return nil, corrupt("param %d: name length %d", i, nameLen)
		}
		name := string(r.bytes(int(nameLen)))
		rank := r.u32()
		if rank > maxRank {
			return nil, corrupt("param %q: rank %d", name, rank)
		}
		shape := make([]int, rank)
		size := uint64(1)
		for d := range shape {
			v := r.u64()
			if limit := uint64(len(r.buf)) / 8; v > math.MaxInt32 || (v != 0 && size > limit/v) {
				return nil, corrupt("param %q: shape does not fit the file", name)
			}
			size *= v
			shape[d] = int(v)
		}
		raw := r.bytes(8 * int(size))
		if r.err != nil {
			break
		}
		vals := make([]float64, size)
		for k := range vals {
			vals[k] = math.Float64frombits(le.Uint64(raw[8*k:]))
		}
		out = append(out, savedParam{name: name, shape: shape, data: vals})
	}
	if r.err != nil {
		return nil, corrupt("truncated")
	}
	if len(r.buf) != 0 {
		return nil, corrupt("%d trailing bytes", len(r.buf))
	}
	return out, nil
}

// reader reads little-endian fields, recording a sticky error when the
// buffer runs out.
type reader struct {
	buf []byte
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n > len(r.buf) {
		r.err = io.ErrUnexpectedEOF
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// SaveFile writes params to the named file atomically: it writes a
// temporary file in the same directory, syncs it to disk and renames it
// over name, so a crash leaves either the old file or the new one.
func SaveFile(name string, params []*ad.Param) error {
	err := atomicfile.Write(name, func(w io.Writer) error { return Save(w, params) })
	if err != nil {
		return fmt.Errorf("nn: SaveFile: %w", err)
	}
	return nil
}

// LoadFile reads the named parameter file into params; see Load.
func LoadFile(name string, params []*ad.Param) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("nn: LoadFile: %w", err)
	}
	defer f.Close()
	if err := Load(f, params); err != nil {
		return fmt.Errorf("%w (file %s)", err, name)
	}
	return nil
}
