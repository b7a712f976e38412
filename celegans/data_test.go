package celegans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realDataDir is where the WormAtlas files live relative to this package
// (/work/main/celegans -> /work/shared/data/celegans).
var realDataDir = filepath.Join("..", "..", "shared", "data", "celegans")

// realConnectome loads the WormAtlas connectome, or skips the test when the
// files are not there.
func realConnectome(t *testing.T) *Connectome {
	t.Helper()
	connect := filepath.Join(realDataDir, "NeuronConnect.csv")
	types := filepath.Join(realDataDir, "NeuronType.csv")
	for _, p := range []string{connect, types} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("WormAtlas data not found at %s (%v); skipping real-data test", p, err)
		}
	}
	c, err := LoadConnectomeFiles(connect, types)
	require.NoError(t, err)
	return c
}

// A small well-formed pair of tables in the WormAtlas layout: trailing
// commas, CRLF line ends, NMJ rows, a self loop, a neuron without a position
// (and a row naming it), and spaces around header names.
const (
	smallConnect = "Neuron 1,Neuron 2,Type,Nbr,\r\n" +
		"AA,BB,S,2,\r\n" +
		"BB,AA,R,2,\r\n" +
		"BB,CC,EJ,1,\r\n" +
		"CC,BB,EJ,1,\r\n" +
		"CC,NMJ,NMJ,4,\r\n" +
		"DD,AA,NMJ,1,\r\n" +
		"DD,DD,EJ,1,\r\n" +
		"EE,AA,Rp,3,\r\n" +
		"NP,AA,S,1,\r\n"
	smallTypes = "Neuron,Soma Position,Soma Region, Span \r\n" +
		"AA,0.5,M,S\r\n" +
		"BB,0.1,H,S\r\n" +
		"CC,0.9,T,L\r\n" +
		"DD,0.1,H,S\r\n" +
		"EE,0,H,S\r\n" +
		"NP,,H,S\r\n"
)

func TestLoadConnectomeSmall(t *testing.T) {
	c, err := LoadConnectome(strings.NewReader(smallConnect), strings.NewReader(smallTypes))
	require.NoError(t, err)
	// Sorted by position, then name: EE 0, BB 0.1, DD 0.1, AA 0.5, CC 0.9.
	assert.Equal(t, []string{"EE", "BB", "DD", "AA", "CC"}, c.Names)
	assert.Equal(t, []float64{0, 0.1, 0.1, 0.5, 0.9}, c.Positions)
	assert.Equal(t, 5, c.N())
	// Edges: AA-BB (S and R merged), BB-CC (EJ both ways), EE-AA.
	// NMJ rows, the position-less NP and the self loop DD-DD are dropped;
	// DD stays as an isolated neuron.
	assert.Equal(t, 3, c.Edges())
	assert.Equal(t, 6, c.DirectedEdges())
	assert.Equal(t, []string{"DD"}, c.SelfLoops())
	idx := func(name string) int {
		i, err := c.NameIndex(name)
		require.NoError(t, err)
		return i
	}
	assert.Equal(t, [][2]int{{0, 3}, {1, 3}, {1, 4}}, c.EdgeList())
	assert.True(t, c.Connected(idx("AA"), idx("BB")))
	assert.True(t, c.Connected(idx("BB"), idx("AA")))
	assert.True(t, c.Connected(idx("CC"), idx("BB")))
	assert.False(t, c.Connected(idx("AA"), idx("CC")))
	assert.False(t, c.Connected(idx("DD"), idx("DD")))
	assert.False(t, c.Connected(-1, 0))
	assert.Equal(t, []int{0, 1}, c.Neighbors(idx("AA")))
	assert.Equal(t, 0, c.Degree(idx("DD")))
	assert.InDelta(t, 6.0/20, c.Density(), 1e-15)
	assert.InDelta(t, 6.0/5, c.MeanDegree(), 1e-15)
	_, err = c.NameIndex("NP")
	assert.ErrorContains(t, err, `unknown neuron "NP"`)

	a := c.Adjacency()
	for i := 0; i < c.N(); i++ {
		for j := 0; j < c.N(); j++ {
			want := 0.0
			if c.Connected(i, j) {
				want = 1
			}
			assert.Equal(t, want, a.At(i, j), "A'[%d][%d]", i, j)
		}
	}
}

func TestLoadConnectomeErrors(t *testing.T) {
	okTypes := "Neuron,Soma Position\nAA,0.5\nBB,0.1\n"
	okConnect := "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\n"
	tests := []struct {
		name           string
		connect, types string
		want           string
	}{
		{"empty connections", "", okTypes, "connections: empty file"},
		{"empty types", okConnect, "", "types: empty file"},
		{"missing Nbr", "Neuron 1,Neuron 2,Type\nAA,BB,S\n", okTypes, `connections line 1: missing column "Nbr"`},
		{"missing position", okConnect, "Neuron,Region\nAA,H\n", `types line 1: missing column "Soma Position"`},
		{"unknown type", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,BB,X,1\n", okTypes, `connections line 3: unknown synapse type "X"`},
		{"bad count", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,two\n", okTypes, `connections line 2: bad synapse count Nbr "two"`},
		{"negative count", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,-1\n", okTypes, `connections line 2: bad synapse count`},
		{"short row", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,BB\n", okTypes, "connections line 3: 2 fields, the header has 4"},
		{"long row", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1,AA,BB,S\n", okTypes, "connections line 2: 7 fields, the header has 4"},
		{"short types row", okConnect, "Neuron,Soma Position,Region\nAA,0.5\n", "types line 2: 2 fields, the header has 3"},
		{"empty name", "Neuron 1,Neuron 2,Type,Nbr\n,BB,S,1\n", okTypes, "connections line 2: empty neuron name"},
		{"bad position", okConnect, "Neuron,Soma Position\nAA,0.5\nBB,front\n", `types line 3: neuron "BB": bad soma position "front"`},
		{"position above 1", okConnect, "Neuron,Soma Position\nAA,1.5\n", `types line 2: neuron "AA": soma position 1.5 not in [0, 1]`},
		{"negative position", okConnect, "Neuron,Soma Position\nAA,-0.1\n", "types line 2"},
		{"NaN position", okConnect, "Neuron,Soma Position\nAA,NaN\n", "not in [0, 1]"},
		{"duplicate neuron", okConnect, "Neuron,Soma Position\nAA,0.5\nBB,0.1\nAA,0.2\n", `types line 4: duplicate neuron "AA" (first on line 2)`},
		{"bad quoting", "Neuron 1,Neuron 2,Type,Nbr\nAA,\"BB,S,1\n", okTypes, "connections"},
		{"zero count", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nBB,AA,R,0\n", okTypes, `connections line 3: synapse count Nbr 0 between BB and AA`},
		{"zero count NMJ", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,NMJ,NMJ,0\n", okTypes, `connections line 3: synapse count Nbr 0`},
		{"unknown first neuron", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nZZ,AA,EJ,2\n", okTypes, `connections line 3: neuron "ZZ" is not in types`},
		{"unknown second neuron", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,zz,EJ,2\n", okTypes, `connections line 3: neuron "zz" is not in types`},
		{"lower case", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\naa,bb,S,1\n", okTypes, `connections line 3: neuron "aa" is not in types`},
		{"header only", "Neuron 1,Neuron 2,Type,Nbr,\n", okTypes, "connections: no rows after the header"},
		{"header and blank lines", "Neuron 1,Neuron 2,Type,Nbr\n\n\n", okTypes, "connections: no rows after the header"},
		{"no edges", "Neuron 1,Neuron 2,Type,Nbr\nAA,AA,S,1\nAA,NMJ,NMJ,2\n", okTypes, "connections: none of its 2 rows connects two neurons of types"},
		{"only NMJ rows", "Neuron 1,Neuron 2,Type,Nbr\nAA,NMJ,NMJ,2\nBB,NMJ,NMJ,1\n", okTypes, "connections: none of its 2 rows connects two neurons of types"},
		{"header only WormAtlas layout", "Neuron 1,Neuron 2,Type,Nbr,\r\n", okTypes, "connections: no rows after the header"},
		{"fractional count", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,BB,EJ,1.5\n", okTypes, `connections line 3: bad synapse count Nbr "1.5" (want a positive integer)`},
		{"empty count", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,\n", okTypes, `connections line 2: bad synapse count Nbr ""`},
		{"negative count message", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,BB,S,-3\n", okTypes, `connections line 3: bad synapse count Nbr "-3"`},
		{"zero count first row", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,EJ,0\nAA,BB,S,1\n", okTypes, `connections line 2: synapse count Nbr 0 between AA and BB`},
		{"zero count spaced", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,BB,S, 00 \n", okTypes, `connections line 3: synapse count Nbr 0`},
		{"unknown neuron after blank lines", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\n\n\nBB,QQ,S,1\n", okTypes, `connections line 5: neuron "QQ" is not in types`},
		{"unknown neuron beside one without position", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nNP,QQ,S,1\n", okTypes + "NP,\n", `connections line 3: neuron "QQ" is not in types`},
		{"unknown neuron, both", "Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nXX,YY,Sp,1\n", okTypes, `connections line 3: neuron "XX" is not in types`},
		{"types header only", okConnect, "Neuron,Soma Position\n", "types: no neuron with a soma position"},
		{"types without positions", okConnect, "Neuron,Soma Position\nAA,\nBB,\n", "types: no neuron with a soma position"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConnectome(strings.NewReader(tc.connect), strings.NewReader(tc.types))
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), "celegans: LoadConnectome: ")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// NMJ rows are dropped whatever they name, as the package documents: the
// published file has NMJ rows of VC06, which NeuronType.csv does not list.
// They are still checked for their count.
func TestLoadConnectomeNMJRowsNotLookedUp(t *testing.T) {
	types := "Neuron,Soma Position\nAA,0.5\nBB,0.1\n"
	c, err := LoadConnectome(strings.NewReader("Neuron 1,Neuron 2,Type,Nbr,\nAA,BB,S,1,\nVC06,NMJ,NMJ,1,\nAA,dBWML1,NMJ,3,\n"), strings.NewReader(types))
	require.NoError(t, err)
	assert.Equal(t, 2, c.N())
	assert.Equal(t, 1, c.Edges())
	_, err = LoadConnectome(strings.NewReader("Neuron 1,Neuron 2,Type,Nbr,\nAA,BB,S,1,\nVC06,NMJ,NMJ,0,\n"), strings.NewReader(types))
	assert.ErrorContains(t, err, "connections line 3: synapse count Nbr 0 between VC06 and NMJ")
}

// The four irregular rows of the published NeuronConnect.csv load as they
// stand (the lower-case row dropped, the rows with 0 synapses kept), and
// only those: the same irregularities in any other row are errors.
func TestLoadConnectomeWormAtlasIrregularRows(t *testing.T) {
	types := "Neuron,Soma Position\nAVFL,0.2\nAVFR,0.2\nVB01,0.3\nFLPR,0.9\n"
	rows := "Neuron 1,Neuron 2,Type,Nbr,\n" +
		"VB01,AVFL,R,1,\n" +
		"VB01,AVFL,Rp,0,\n" +
		"avfl,avfr,Rp,1,\n" +
		"AVFL,AVFR,S,1,\n" +
		"AVFL,VB01,Sp,0,\n" +
		"FLPR,VB01,Sp,0,\n"
	c, err := LoadConnectome(strings.NewReader(rows), strings.NewReader(types))
	require.NoError(t, err)
	assert.Equal(t, 3, c.Edges(), "AVFL-AVFR, AVFL-VB01 and VB01-FLPR")

	for _, bad := range []struct{ row, want string }{
		{"avfl,avfr,Rp,2,", `line 3: neuron "avfl" is not in types`},
		{"avfr,avfl,Rp,1,", `line 3: neuron "avfr" is not in types`},
		{"VB01,AVFL,R,0,", "line 3: synapse count Nbr 0 between VB01 and AVFL"},
		{"FLPR,VB01,S,0,", "line 3: synapse count Nbr 0 between FLPR and VB01"},
	} {
		_, err := LoadConnectome(strings.NewReader("Neuron 1,Neuron 2,Type,Nbr,\nAVFL,AVFR,S,1,\n"+bad.row+"\n"), strings.NewReader(types))
		assert.ErrorContains(t, err, bad.want, bad.row)
	}
}

func TestLoadConnectomeFilesErrors(t *testing.T) {
	dir := t.TempDir()
	connect := filepath.Join(dir, "c.csv")
	types := filepath.Join(dir, "t.csv")
	require.NoError(t, os.WriteFile(connect, []byte("Neuron 1,Neuron 2,Type,Nbr\nAA,BB,Q,1\n"), 0o600))
	require.NoError(t, os.WriteFile(types, []byte("Neuron,Soma Position\nAA,0.5\nBB,0.1\n"), 0o600))

	_, err := LoadConnectomeFiles(connect, types)
	require.Error(t, err)
	assert.Contains(t, err.Error(), connect+" line 2: unknown synapse type")

	_, err = LoadConnectomeFiles(filepath.Join(dir, "missing.csv"), types)
	assert.ErrorContains(t, err, "missing.csv")

	// Errors in the rows name the file and the line.
	for content, want := range map[string]string{
		"Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,ZZ,S,1\n":  connect + ` line 3: neuron "ZZ" is not in ` + types,
		"Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,0\n":             connect + " line 2: synapse count Nbr 0",
		"Neuron 1,Neuron 2,Type,Nbr\n":                        connect + ": no rows after the header",
		"Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nBB,AA,R,-2\n": connect + ` line 3: bad synapse count Nbr "-2"`,
		"Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1.0\n":           connect + ` line 2: bad synapse count Nbr "1.0"`,
		"Neuron 1,Neuron 2,Type,Nbr\nAA,AA,S,1\n":             connect + ": none of its 1 rows connects two neurons of " + types,
	} {
		require.NoError(t, os.WriteFile(connect, []byte(content), 0o600))
		_, err = LoadConnectomeFiles(connect, types)
		assert.ErrorContains(t, err, want)
	}
}

func TestNewConnectomeErrors(t *testing.T) {
	tests := []struct {
		name      string
		names     []string
		positions []float64
		edges     [][2]int
		want      string
	}{
		{"length mismatch", []string{"a", "b"}, []float64{0}, nil, "2 names but 1 positions"},
		{"empty name", []string{"a", ""}, []float64{0, 1}, nil, "empty name"},
		{"duplicate", []string{"a", "a"}, []float64{0, 1}, nil, `duplicate neuron "a"`},
		{"position", []string{"a", "b"}, []float64{0, 2}, nil, "position 2 not in [0, 1]"},
		{"edge range", []string{"a", "b"}, []float64{0, 1}, [][2]int{{0, 2}}, "out of range"},
		{"self loop", []string{"a", "b"}, []float64{0, 1}, [][2]int{{1, 1}}, "self loop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewConnectome(tc.names, tc.positions, tc.edges)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestLoadConnectomeReal checks the join of the WormAtlas files against the
// figures of the data README and the protocol: 279 neurons; 2287 connected
// pairs, so 4574 non-zero entries of A' — the README's "4,577 directed
// edges" are the distinct ordered (Neuron 1, Neuron 2) pairs of the kept
// rows, which also count the three self loops (RIBL, RIBR, VA08) that A'
// drops; density 2287 / 38781 = 0.0590; mean degree 16.39.
func TestLoadConnectomeReal(t *testing.T) {
	c := realConnectome(t)
	assert.Equal(t, 279, c.N())
	assert.Equal(t, 2287, c.Edges())
	assert.Equal(t, []string{"RIBL", "RIBR", "VA08"}, c.SelfLoops())
	assert.Equal(t, 4577, c.DirectedEdges()+len(c.SelfLoops()))
	// Published to three decimals (density) and one (degree).
	assert.InDelta(t, 0.059, c.Density(), 0.0005)
	assert.InDelta(t, 16.4, c.MeanDegree(), 0.05)

	// Canonical order: positions non-decreasing, names increasing within ties.
	for i := 1; i < c.N(); i++ {
		p, q := c.Positions[i-1], c.Positions[i]
		require.True(t, p < q || (p == q && c.Names[i-1] < c.Names[i]), "order at %d", i)
	}
	// A'symmetric without self loops, matching EdgeList and Neighbors.
	deg := 0
	for i := 0; i < c.N(); i++ {
		require.False(t, c.Connected(i, i))
		for _, j := range c.Neighbors(i) {
			require.True(t, c.Connected(j, i))
		}
		deg += c.Degree(i)
	}
	assert.Equal(t, 2*c.Edges(), deg)
	assert.Len(t, c.EdgeList(), c.Edges())

	// Spot checks against the file: AVAL and AVAR are joined by gap
	// junctions; ADAL's soma is at 0.21.
	i, err := c.NameIndex("AVAL")
	require.NoError(t, err)
	j, err := c.NameIndex("AVAR")
	require.NoError(t, err)
	assert.True(t, c.Connected(i, j))
	k, err := c.NameIndex("ADAL")
	require.NoError(t, err)
	assert.Equal(t, 0.21, c.Positions[k])
	_, err = c.NameIndex("avfl")
	assert.Error(t, err)
}

// A WormAtlas file cut off part-way through a row must not load as a
// smaller connectome: the damaged last row is an error naming its line.
func TestLoadConnectomeCutOffFile(t *testing.T) {
	realConnectome(t) // skips without the data
	connect, err := os.ReadFile(filepath.Join(realDataDir, "NeuronConnect.csv"))
	require.NoError(t, err)
	types, err := os.ReadFile(filepath.Join(realDataDir, "NeuronType.csv"))
	require.NoError(t, err)
	for _, frac := range []float64{0.05, 0.3, 0.77} {
		cut := int(frac * float64(len(connect)))
		for connect[cut-1] == ',' || connect[cut-1] == '\n' || connect[cut-1] == '\r' {
			cut++ // end inside a field, so the last row is short
		}
		_, err := LoadConnectome(strings.NewReader(string(connect[:cut])), strings.NewReader(string(types)))
		require.Error(t, err, "file cut at byte %d of %d", cut, len(connect))
		assert.Contains(t, err.Error(), "fields, the header has 5")
	}
}

// The published NeuronConnect.csv damaged in one place: reduced to its
// header, a row naming a neuron NeuronType.csv lacks, a row with no
// synapses. Each is an error naming the file and the line.
func TestLoadConnectomeRealDamaged(t *testing.T) {
	realConnectome(t) // skips without the data
	connectPath := filepath.Join(realDataDir, "NeuronConnect.csv")
	typesPath := filepath.Join(realDataDir, "NeuronType.csv")
	connect, err := os.ReadFile(connectPath)
	require.NoError(t, err)
	row := "ADAR,ADAL,EJ,1,"
	require.True(t, strings.HasPrefix(string(firstLines(connect, 2)[len(firstLines(connect, 1)):]), row), "line 2 of %s", connectPath)
	dir := t.TempDir()
	damaged := filepath.Join(dir, "NeuronConnect.csv")
	for _, tc := range []struct {
		name, content, want string
	}{
		{"header only", string(firstLines(connect, 1)), damaged + ": no rows after the header"},
		{"unknown neuron", strings.Replace(string(connect), row, "ADAR,ADAX,EJ,1,", 1), damaged + ` line 2: neuron "ADAX" is not in ` + typesPath},
		{"zero count", strings.Replace(string(connect), row, "ADAR,ADAL,EJ,0,", 1), damaged + " line 2: synapse count Nbr 0 between ADAR and ADAL"},
		{"negative count", strings.Replace(string(connect), row, "ADAR,ADAL,EJ,-1,", 1), damaged + ` line 2: bad synapse count Nbr "-1"`},
		{"fractional count", strings.Replace(string(connect), row, "ADAR,ADAL,EJ,1.5,", 1), damaged + ` line 2: bad synapse count Nbr "1.5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(damaged, []byte(tc.content), 0o600))
			c, err := LoadConnectomeFiles(damaged, typesPath)
			assert.Nil(t, c)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestWormAtlasMismatch(t *testing.T) {
	c := realConnectome(t)
	assert.Equal(t, "", c.WormAtlasMismatch(), "the real files must match the WormAtlas size")
	small, err := LoadConnectome(strings.NewReader(smallConnect), strings.NewReader(smallTypes))
	require.NoError(t, err)
	assert.Contains(t, small.WormAtlasMismatch(), "has 5 neurons")
}
