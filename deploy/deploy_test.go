// Package deploy_test checks the container recipe and the scheduler
// manifests in deploy/: that they name programs and flags that exist, and,
// where a Docker daemon is reachable, that the image builds and runs.
package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
)

// flagsOf returns the flag names that the program examples/name defines.
func flagsOf(t *testing.T, name string) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "examples", name, "main.go"))
	require.NoError(t, err)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`fs\.[A-Za-z0-9]+Var\([^,]+, "([a-zA-Z0-9-]+)"`).FindAllStringSubmatch(string(src), -1) {
		flags[m[1]] = true
	}
	require.NotEmpty(t, flags, "no flags found in examples/%s/main.go", name)
	return flags
}

// TestManifests: the Kubernetes job runs a program that the Dockerfile
// builds, and both manifests pass only flags that the C. elegans command
// defines.
func TestManifests(t *testing.T) {
	docker, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	assert.Contains(t, string(docker), "go build -trimpath -buildvcs=false -o /out/ ./examples/...", "the image builds every program")
	assert.Contains(t, string(docker), "COPY --from=build /out/ /usr/local/bin/")
	flags := flagsOf(t, "celegans")

	k8s, err := os.ReadFile(filepath.Join("kubernetes", "celegans-table3.yaml"))
	require.NoError(t, err)
	cmd := regexp.MustCompile(`command: \["/usr/local/bin/([a-z0-9]+)"\]`).FindStringSubmatch(string(k8s))
	require.NotNil(t, cmd, "the job runs a program of the image")
	_, err = os.Stat(filepath.Join("..", "examples", cmd[1], "main.go"))
	require.NoError(t, err, "the image has /usr/local/bin/%s only if examples/%s exists", cmd[1], cmd[1])
	args := regexp.MustCompile(`(?m)^\s+- -([a-z0-9-]+)=`).FindAllStringSubmatch(string(k8s), -1)
	require.NotEmpty(t, args)
	for _, a := range args {
		assert.True(t, flags[a[1]], "kubernetes: -%s is not a flag of examples/%s", a[1], cmd[1])
	}

	slurm, err := os.ReadFile(filepath.Join("slurm", "celegans-table3.sbatch"))
	require.NoError(t, err)
	line := regexp.MustCompile(`(?s)\nsrun [^\n]*go run ./examples/celegans (.*?)\n[^ ]`).FindStringSubmatch(string(slurm) + "\nX")
	require.NotNil(t, line, "the Slurm script runs the C. elegans command")
	for _, a := range regexp.MustCompile(`(?:^|\s)-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(line[1], -1) {
		assert.True(t, flags[a[1]], "slurm: -%s is not a flag of examples/celegans", a[1])
	}
}

// TestDockerBuild builds the image and runs its entry point with -h. It
// needs a reachable Docker daemon (and the network, for the base images),
// and is skipped otherwise.
func TestDockerBuild(t *testing.T) {
	longtest.Skip(t, "builds the container image")
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed: not building the container image")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon: not building the container image (%s)", lastLine(out))
	}
	tag := "permlab-deploy-test:" + time.Now().Format("20060102150405")
	build := exec.CommandContext(ctx, "docker", "build", "-f", "deploy/Dockerfile", "-t", tag, ".")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "docker build:\n%s", out)
	defer exec.Command("docker", "rmi", "-f", tag).Run() //nolint:errcheck // best effort
	out, err = exec.CommandContext(ctx, "docker", "run", "--rm", tag, "-h").CombinedOutput()
	require.NoError(t, err, "docker run %s -h:\n%s", tag, out)
	assert.Contains(t, string(out), "-connect")
}

// lastLine returns the last line of b, where docker writes its error.
func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	return s[strings.LastIndex(s, "\n")+1:]
}
