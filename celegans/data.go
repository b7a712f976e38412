// Connectome data: the Connectome type and the WormAtlas CSV loaders.

package celegans

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Connectome is a set of named neurons with soma positions along the body
// and a symmetric, loop-free connection pattern A'.
//
// Neuron i has name Names[i] and position Positions[i] in [0, 1] (0 at the
// nose, 1 at the tail). Indices into Names are the canonical identities used
// everywhere else in the package (the columns of a candidate mask, the values
// of a true permutation, the rows and columns of W). Connectomes from
// LoadConnectome and Synthetic are in canonical order: sorted by position,
// ties broken by name. Treat Names and Positions as read-only: the name index
// and the adjacency are built from them once.
type Connectome struct {
	Names     []string
	Positions []float64

	index     map[string]int
	nbrs      [][]int // increasing neighbour indices
	edges     int     // undirected edges
	selfLoops []string
}

// NewConnectome returns the connectome with the given neurons, in the given
// order, and the undirected edges listed as index pairs into names. Edges may
// be listed in either direction or both; duplicates are merged. Names must be
// non-empty and distinct, positions finite and in [0, 1], edge indices in
// range and not self loops.
func NewConnectome(names []string, positions []float64, edges [][2]int) (*Connectome, error) {
	n := len(names)
	if len(positions) != n {
		return nil, fmt.Errorf("celegans: NewConnectome: %d names but %d positions", n, len(positions))
	}
	c := &Connectome{
		Names:     append([]string(nil), names...),
		Positions: append([]float64(nil), positions...),
		index:     make(map[string]int, n),
		nbrs:      make([][]int, n),
	}
	for i, name := range names {
		if name == "" {
			return nil, fmt.Errorf("celegans: NewConnectome: neuron %d has an empty name", i)
		}
		if j, dup := c.index[name]; dup {
			return nil, fmt.Errorf("celegans: NewConnectome: duplicate neuron %q (indices %d and %d)", name, j, i)
		}
		c.index[name] = i
		if p := positions[i]; !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("celegans: NewConnectome: neuron %q: position %v not in [0, 1]", name, p)
		}
	}
	for k, e := range edges {
		i, j := e[0], e[1]
		if i < 0 || i >= n || j < 0 || j >= n {
			return nil, fmt.Errorf("celegans: NewConnectome: edge %d (%d, %d) out of range for %d neurons", k, i, j, n)
		}
		if i == j {
			return nil, fmt.Errorf("celegans: NewConnectome: edge %d is a self loop on neuron %d", k, i)
		}
		c.nbrs[i] = append(c.nbrs[i], j)
		c.nbrs[j] = append(c.nbrs[j], i)
	}
	// Sorted and merged, the lists are the adjacency: O(edges), not N².
	for i, nb := range c.nbrs {
		slices.Sort(nb)
		c.nbrs[i] = slices.Clip(slices.Compact(nb))
		c.edges += len(c.nbrs[i])
	}
	c.edges /= 2
	return c, nil
}

// N returns the number of neurons.
func (c *Connectome) N() int { return len(c.Names) }

// Edges returns the number of undirected edges of A' (connected pairs i < j).
func (c *Connectome) Edges() int { return c.edges }

// DirectedEdges returns the number of non-zero entries of the symmetric
// adjacency matrix A', 2 * Edges().
func (c *Connectome) DirectedEdges() int { return 2 * c.edges }

// Density returns the fraction of the N(N-1)/2 neuron pairs that are
// connected, 0 when N < 2.
func (c *Connectome) Density() float64 {
	n := c.N()
	if n < 2 {
		return 0
	}
	return float64(2*c.edges) / float64(n*(n-1))
}

// MeanDegree returns the mean number of neighbours per neuron, 2 Edges / N,
// 0 when N = 0.
func (c *Connectome) MeanDegree() float64 {
	if c.N() == 0 {
		return 0
	}
	return float64(2*c.edges) / float64(c.N())
}

// NameIndex returns the canonical index of the neuron with the given name.
func (c *Connectome) NameIndex(name string) (int, error) {
	i, ok := c.index[name]
	if !ok {
		return -1, fmt.Errorf("celegans: unknown neuron %q", name)
	}
	return i, nil
}

// Connected reports whether neurons i and j are connected in A'. It is false
// for i == j and for indices out of range.
func (c *Connectome) Connected(i, j int) bool {
	n := c.N()
	if i < 0 || j < 0 || i >= n || j >= n {
		return false
	}
	_, ok := slices.BinarySearch(c.nbrs[i], j)
	return ok
}

// Neighbors returns the neurons connected to neuron i, in increasing order,
// or nil if i is out of range. The slice is a copy.
func (c *Connectome) Neighbors(i int) []int {
	if i < 0 || i >= c.N() {
		return nil
	}
	return append([]int(nil), c.nbrs[i]...)
}

// Degree returns the number of neighbours of neuron i, 0 if i is out of range.
func (c *Connectome) Degree(i int) int {
	if i < 0 || i >= c.N() {
		return 0
	}
	return len(c.nbrs[i])
}

// EdgeList returns the undirected edges as pairs {i, j} with i < j, sorted.
func (c *Connectome) EdgeList() [][2]int {
	out := make([][2]int, 0, c.edges)
	for i, nb := range c.nbrs {
		for _, j := range nb {
			if j > i {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// Adjacency returns A' as a symmetric 0/1 matrix with zero diagonal.
func (c *Connectome) Adjacency() *mat.Dense {
	n := c.N()
	if n == 0 {
		return &mat.Dense{}
	}
	a := mat.NewDense(n, n, nil)
	for i, nb := range c.nbrs {
		for _, j := range nb {
			a.Set(i, j, 1)
		}
	}
	return a
}

// SelfLoops returns the names of neurons whose connections to themselves
// were listed in the loaded file and dropped (A' has no self loops), in
// canonical order. It is empty for connectomes not read by LoadConnectome.
func (c *Connectome) SelfLoops() []string {
	return append([]string(nil), c.selfLoops...)
}

// Synapse type codes of the WormAtlas NeuronConnect table. S and Sp (Neuron 1
// sends a chemical synapse to Neuron 2), R and Rp (Neuron 1 receives one),
// EJ (electrical junction) connect the two neurons; NMJ rows (neuromuscular
// junctions) are dropped.
var synapseTypes = map[string]bool{
	"S": true, "Sp": true, "R": true, "Rp": true, "EJ": true, "NMJ": false,
}

// LoadConnectome reads the WormAtlas tables NeuronConnect (connect) and
// NeuronType (types) and returns their join as a Connectome.
//
// The connection table is CSV with a header naming the columns "Neuron 1",
// "Neuron 2", "Type" and "Nbr" (in any order, names compared without case or
// surrounding spaces; extra columns, such as the empty one left by a trailing
// comma, are ignored). Type is one of S, Sp, R, Rp, EJ, NMJ and Nbr a
// positive integer, the number of synapses. The type table needs the columns
// "Neuron" and "Soma Position", the position along the body in [0, 1]; a
// neuron with an empty position is dropped.
//
// The neurons are those of the type table with a position, in canonical
// order (by position, then name). A' connects i and j when any non-NMJ row
// names them, in either order: chemical and electrical synapses are merged
// and directions forgotten, A' = (A + Aᵀ) > 0. NMJ rows (neuromuscular
// junctions, whose second name is a muscle), rows naming a neuron of the
// type table without a position, and self loops (see SelfLoops) are
// dropped.
//
// On the WormAtlas files this gives 279 neurons and 2287 edges: density
// 2287 / 38781 = 0.0590, mean degree 16.39. The "4,577 directed edges"
// quoted with these files are the distinct ordered (Neuron 1, Neuron 2)
// pairs of the kept rows: 2 x 2287, plus the self loops of RIBL, RIBR and
// VA08.
//
// Malformed input gives an error naming the table (the file's path, for
// LoadConnectomeFiles) and line: missing columns, short rows, unknown type
// codes, synapse counts that are not positive integers (0, negative, "1.5",
// empty), a non-NMJ row naming a neuron that is not in the type table
// (names are compared exactly), positions outside [0, 1], duplicate neurons
// in the type table; so do a type table without a neuron with a position
// and a connection table without a connection between two of them (only a
// header, or only NMJ rows and self loops). The names of NMJ rows are not
// looked up, as those rows are dropped whatever they name: their second
// name is a muscle, and the published file's NMJ rows also name VC06,
// which has no row in NeuronType.csv. So the rows dropped are exactly the
// NMJ rows, rows naming a listed neuron without a position, self loops and
// blank lines; no row is dropped for naming an unknown neuron (save one,
// below).
//
// The published WormAtlas NeuronConnect.csv breaks two of these rules in
// four rows, which are accepted as they stand so that the published file
// loads (see wormAtlasIrregular): the lower-case row "avfl,avfr,Rp,1"
// names no neuron of the type table and is dropped, and three rows with 0
// synapses (VB01-AVFL twice, FLPR-VB01) are kept as connections, which the
// same pairs have from rows with synapses anyway. Any other such row, in
// that file or another, is an error.
func LoadConnectome(connect, types io.Reader) (*Connectome, error) {
	c, err := loadConnectome(connect, "connections", types, "types")
	if err != nil {
		return nil, fmt.Errorf("celegans: LoadConnectome: %w", err)
	}
	return c, nil
}

// LoadConnectomeFiles is LoadConnectome on the files at the given paths,
// typically NeuronConnect.csv and NeuronType.csv.
func LoadConnectomeFiles(connectPath, typesPath string) (*Connectome, error) {
	fc, err := os.Open(connectPath)
	if err != nil {
		return nil, fmt.Errorf("celegans: LoadConnectomeFiles: %w", err)
	}
	defer fc.Close()
	ft, err := os.Open(typesPath)
	if err != nil {
		return nil, fmt.Errorf("celegans: LoadConnectomeFiles: %w", err)
	}
	defer ft.Close()
	c, err := loadConnectome(fc, connectPath, ft, typesPath)
	if err != nil {
		return nil, fmt.Errorf("celegans: LoadConnectomeFiles: %w", err)
	}
	return c, nil
}

// csvTable is a CSV reader that knows its header and reports line numbers.
type csvTable struct {
	label  string
	r      *csv.Reader
	cols   []int // column index of each wanted header name
	fields int   // number of fields in the header; every record must have as many
}

// openTable reads the header from r and locates the wanted columns.
func openTable(r io.Reader, label string, wanted ...string) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file, no header", label)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	t := &csvTable{label: label, r: cr, cols: make([]int, len(wanted)), fields: len(header)}
	for k, w := range wanted {
		t.cols[k] = -1
		for j, h := range header {
			h = strings.TrimPrefix(h, "\uFEFF")
			if strings.EqualFold(strings.TrimSpace(h), w) {
				t.cols[k] = j
				break
			}
		}
		if t.cols[k] < 0 {
			return nil, fmt.Errorf("%s line 1: missing column %q in header %q", label, w, strings.Join(header, ","))
		}
	}
	return t, nil
}

// next returns the wanted fields (trimmed) of the next non-blank record and
// its line number, or io.EOF.
func (t *csvTable) next() ([]string, int, error) {
	for {
		rec, err := t.r.Read()
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", t.label, err)
		}
		line, _ := t.r.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		// A record with more or fewer fields than the header is a damaged
		// file (a row cut off, or two rows run together), not data.
		if len(rec) != t.fields {
			return nil, line, fmt.Errorf("%s line %d: %d fields, the header has %d (is the file cut off or damaged?)", t.label, line, len(rec), t.fields)
		}
		out := make([]string, len(t.cols))
		for k, j := range t.cols {
			out[k] = strings.TrimSpace(rec[j])
		}
		return out, line, nil
	}
}

func loadConnectome(connect io.Reader, connectLabel string, types io.Reader, typesLabel string) (*Connectome, error) {
	if connect == nil || types == nil {
		return nil, errors.New("nil reader")
	}
	// Neuron positions.
	tt, err := openTable(types, typesLabel, "Neuron", "Soma Position")
	if err != nil {
		return nil, err
	}
	type neuron struct {
		name string
		pos  float64
	}
	var neurons []neuron
	seen := make(map[string]int) // name -> line
	for {
		f, line, err := tt.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		name, ps := f[0], f[1]
		if name == "" {
			return nil, fmt.Errorf("%s line %d: empty neuron name", typesLabel, line)
		}
		if prev, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s line %d: duplicate neuron %q (first on line %d)", typesLabel, line, name, prev)
		}
		seen[name] = line
		if ps == "" {
			continue // no position: dropped
		}
		p, err := strconv.ParseFloat(ps, 64)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: neuron %q: bad soma position %q", typesLabel, line, name, ps)
		}
		if !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("%s line %d: neuron %q: soma position %v not in [0, 1]", typesLabel, line, name, p)
		}
		neurons = append(neurons, neuron{name, p})
	}
	sort.Slice(neurons, func(a, b int) bool {
		if neurons[a].pos != neurons[b].pos {
			return neurons[a].pos < neurons[b].pos
		}
		return neurons[a].name < neurons[b].name
	})
	names := make([]string, len(neurons))
	positions := make([]float64, len(neurons))
	index := make(map[string]int, len(neurons))
	for i, nr := range neurons {
		names[i], positions[i] = nr.name, nr.pos
		index[nr.name] = i
	}

	if len(neurons) == 0 {
		return nil, fmt.Errorf("%s: no neuron with a soma position", typesLabel)
	}

	// Connections.
	ct, err := openTable(connect, connectLabel, "Neuron 1", "Neuron 2", "Type", "Nbr")
	if err != nil {
		return nil, err
	}
	var edges [][2]int
	self := make(map[int]bool)
	rows := 0
	for {
		f, line, err := ct.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rows++
		a, b, typ, nbr := f[0], f[1], f[2], f[3]
		if a == "" || b == "" {
			return nil, fmt.Errorf("%s line %d: empty neuron name", connectLabel, line)
		}
		keep, ok := synapseTypes[typ]
		if !ok {
			return nil, fmt.Errorf("%s line %d: unknown synapse type %q (want S, Sp, R, Rp, EJ or NMJ)", connectLabel, line, typ)
		}
		k, err := strconv.Atoi(nbr)
		if err != nil || k < 0 {
			return nil, fmt.Errorf("%s line %d: bad synapse count Nbr %q (want a positive integer)", connectLabel, line, nbr)
		}
		irregular := wormAtlasIrregular[[4]string{a, b, typ, nbr}]
		if k == 0 && !irregular {
			return nil, fmt.Errorf("%s line %d: synapse count Nbr 0 between %s and %s (a row with no synapses connects nothing)", connectLabel, line, a, b)
		}
		if !keep {
			continue
		}
		i, iok := index[a]
		j, jok := index[b]
		if !iok || !jok {
			for _, name := range []string{a, b} {
				if _, listed := seen[name]; !listed && !irregular {
					return nil, fmt.Errorf("%s line %d: neuron %q is not in %s", connectLabel, line, name, typesLabel)
				}
			}
			continue // a neuron without a position, or the irregular row
		}
		if i == j {
			self[i] = true
			continue
		}
		edges = append(edges, [2]int{i, j})
	}
	switch {
	case rows == 0:
		return nil, fmt.Errorf("%s: no rows after the header", connectLabel)
	case len(edges) == 0:
		return nil, fmt.Errorf("%s: none of its %d rows connects two neurons of %s with a soma position", connectLabel, rows, typesLabel)
	}
	c, err := NewConnectome(names, positions, edges)
	if err != nil {
		return nil, err
	}
	for i := range names {
		if self[i] {
			c.selfLoops = append(c.selfLoops, names[i])
		}
	}
	return c, nil
}

// wormAtlasIrregular are the rows (Neuron 1, Neuron 2, Type, Nbr, as in the
// file) of the published WormAtlas NeuronConnect.csv that break the rules of
// LoadConnectome, accepted there as they stand so that the published file
// loads with the connectome every result of this module was computed on:
// "avfl,avfr" names no neuron of NeuronType.csv (the same pair has upper-case
// rows, and the row is dropped), and three rows give 0 synapses for pairs
// that other rows of the file connect with synapses (they are kept as
// connections, which changes nothing).
var wormAtlasIrregular = map[[4]string]bool{
	{"avfl", "avfr", "Rp", "1"}: true,
	{"VB01", "AVFL", "Rp", "0"}: true,
	{"AVFL", "VB01", "Sp", "0"}: true,
	{"FLPR", "VB01", "Sp", "0"}: true,
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// The size of the WormAtlas connectome (Varshney et al. 2011) as this
// package loads it: neurons with a soma position, and undirected edges of
// the symmetrised chemical and electrical synapses without NMJ rows.
const (
	WormAtlasNeurons = 279
	WormAtlasEdges   = 2287
)

// WormAtlasMismatch returns a sentence saying how c differs in size from
// the WormAtlas connectome, or "" when it has the same numbers of neurons
// and edges. Programs print it before a run so that a damaged or different
// file does not pass unnoticed.
func (c *Connectome) WormAtlasMismatch() string {
	if c.N() == WormAtlasNeurons && c.Edges() == WormAtlasEdges {
		return ""
	}
	return fmt.Sprintf("the connectome has %d neurons and %d edges, the WormAtlas files give %d and %d; results will not be comparable with the paper's",
		c.N(), c.Edges(), WormAtlasNeurons, WormAtlasEdges)
}
