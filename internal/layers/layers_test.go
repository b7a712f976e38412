package layers

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// violations returns one message for each package in no layer and for each
// import that points up or sideways.
func violations(pkgs map[string][]string) []string {
	var out []string
	for pkg, deps := range pkgs {
		layer, unit, ok := Of(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("package %s is in no layer: add it to layers.Layers (and to the package table of README.md)", pkg))
			continue
		}
		for _, dep := range deps {
			dl, du, ok := Of(dep)
			if ok && du != unit && dl >= layer {
				out = append(out, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s): imports must point down", pkg, layer, unit, dep, dl, du))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestImportsPointDown(t *testing.T) {
	pkgs, err := Packages(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"ad", "vi", "mcmc", "models", "celegans", "nn/train", "networks/jigsaw", "internal/layers"} {
		if _, ok := pkgs[must]; !ok {
			t.Fatalf("package %s not found: the walk of the module is broken", must)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolations checks that the check can fail: an import sideways, one
// up and a package in no layer are each reported, and imports within a unit
// or down are not.
func TestViolations(t *testing.T) {
	got := violations(map[string][]string{
		"vi":              {"mcmc", "models", "nn/train"},
		"models":          {"vi", "dist"},
		"networks/jigsaw": {"networks/digits", "relax"},
		"stray":           {"ad"},
	})
	want := []string{
		"models (layer 5, models) imports vi (layer 6, vi): imports must point down",
		"package stray is in no layer: add it to layers.Layers (and to the package table of README.md)",
		"vi (layer 6, vi) imports mcmc (layer 6, mcmc): imports must point down",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
}

// TestOf pins the rules that the layering depends on: an exact pattern
// wins, and a folder pattern holds everything under it.
func TestOf(t *testing.T) {
	for _, c := range []struct {
		pkg   string
		layer int
		unit  string
	}{
		{"models", 5, "models"},
		{"models/vae", 7, "models/..."},
		{"nn/train", 3, "nn/..."},
		{"nn", 3, "nn/..."},
		{"internal/f64", 0, "internal/..."},
		{"internal/paramfile", 3, "internal/paramfile"},
		{"networks/jigsaw", 5, "networks/..."},
		{"examples/celegans", 8, "examples/..."},
	} {
		l, u, ok := Of(c.pkg)
		if !ok || l != c.layer || u != c.unit {
			t.Errorf("Of(%q) = %d, %q, %v; want %d, %q", c.pkg, l, u, ok, c.layer, c.unit)
		}
	}
	if _, _, ok := Of("modelsx"); ok {
		t.Error("Of(modelsx) matched: a folder pattern must not match a prefix of a name")
	}
}
