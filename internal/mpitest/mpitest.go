package mpitest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/internal/gputest"
)

// EnvMode names the part a rank runs; EnvDir is a directory for the
// ranks' results.
const (
	EnvMode = "EXTENSOR_MPITEST_MODE"
	EnvDir  = "EXTENSOR_MPITEST_DIR"
)

// Mode is the part this process runs as a rank ("" in a plain test run).
func Mode() string { return os.Getenv(EnvMode) }

// Dir is the directory for the ranks' results.
func Dir() string { return os.Getenv(EnvDir) }

// Command returns mpirun starting np ranks of this test binary in mode,
// with dir as EnvDir, the extra environment env and the arguments args
// (after the binary's name). Without mpirun it skips tb, but under CI
// (CI=true), where make deps installs Open MPI, it fails tb.
func Command(tb testing.TB, np int, mode, dir string, env []string, args ...string) *exec.Cmd {
	tb.Helper()
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		if gputest.CI() {
			tb.Fatalf("mpirun: %v (make deps installs openmpi-bin)", err)
		}
		tb.Skipf("mpirun: %v (apt-get install openmpi-bin libopenmpi-dev)", err)
	}
	// --oversubscribe: more ranks than cores; --bind-to none: lavapipe's
	// threads are not held to one core a rank.
	a := []string{"-np", strconv.Itoa(np), "--oversubscribe", "--bind-to", "none"}
	if os.Geteuid() == 0 {
		a = append(a, "--allow-run-as-root")
	}
	a = append(a, os.Args[0])
	cmd := exec.Command(mpirun, append(a, args...)...)
	cmd.Env = append(os.Environ(), EnvMode+"="+mode, EnvDir+"="+dir)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// Rank is the process's rank as Open MPI's launcher set it (readable
// after MPI_Finalize too).
func Rank() int {
	r, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_RANK"))
	return r
}

// Results runs np ranks of this test binary in mode (Command), fails tb
// if the job fails, and returns what each rank saved.
func Results[T any](tb testing.TB, np int, mode string) []T {
	tb.Helper()
	dir := tb.TempDir()
	out, err := Command(tb, np, mode, dir, nil).CombinedOutput()
	if err != nil {
		tb.Fatalf("mpirun: %v\n%s", err, out)
	}
	rs := make([]T, np)
	for i := range rs {
		Load(tb, dir, i, &rs[i])
	}
	return rs
}

// Digest is the SHA-256 of the variables' values, in hexadecimal: equal
// digests, equal bits.
func Digest(vs []*autograd.Var) string {
	h := sha256.New()
	for _, v := range vs {
		b, err := v.Value().Float64s()
		if err != nil {
			return err.Error()
		}
		binary.Write(h, binary.LittleEndian, b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Save writes v, as JSON, to the results of rank rank in Dir.
func Save(rank int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(Dir(), fmt.Sprintf("rank-%d.json", rank)), b, 0o644)
}

// Finish ends a rank's part: it saves v (Save, at Rank) unless err is
// set, and returns the process's exit code, printing an error.
func Finish(v any, err error) int {
	if err == nil {
		err = Save(Rank(), v)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Load reads the results that rank rank saved in dir into v.
func Load(tb testing.TB, dir string, rank int, v any) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.json", rank)))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		tb.Fatalf("rank %d's results: %v", rank, err)
	}
}

// Kill sends SIGKILL to rank rank of the job Command started with dir:
// the process whose environment holds both (Linux's /proc).
func Kill(tb testing.TB, dir string, rank int) {
	tb.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		tb.Fatal(err)
	}
	want := [][]byte{[]byte(EnvDir + "=" + dir), []byte("OMPI_COMM_WORLD_RANK=" + strconv.Itoa(rank))}
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		vars := bytes.Split(env, []byte{0})
		if slices.ContainsFunc(vars, func(v []byte) bool { return bytes.Equal(v, want[0]) }) &&
			slices.ContainsFunc(vars, func(v []byte) bool { return bytes.Equal(v, want[1]) }) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				tb.Fatalf("killing rank %d (pid %d): %v", rank, pid, err)
			}
			return
		}
	}
	tb.Fatalf("no process of rank %d of the job in %s", rank, dir)
}
