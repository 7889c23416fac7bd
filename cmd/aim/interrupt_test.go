package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSESignal runs `aim se` in a real subprocess, sends it SIGINT once its outputs are open
// and it is solving, and checks the exit status 130, a CSV of the rows finished beside a
// manifest that says incomplete and lists the rest of the 400 points, the plot, and no
// temporary left in the folder.
func TestSESignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	dir := t.TempDir()
	const points = 400
	cmd := exec.Command(os.Args[0], "se", "--quiet", "--channel=softmax", "--T=2", "--rho=0.5", "--alpha=0.05:0.25:400",
		"--gen-samples=4000", "--workers=1", "--out="+filepath.Join(dir, "se.csv"), "--plot="+filepath.Join(dir, "se.png"))
	cmd.Env = append(os.Environ(), "AIM_TEST_RUN_MAIN=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The temporaries appear once the job has opened its outputs and starts solving.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".se.csv.tmp*")); len(tmp) > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want status %d; stderr:\n%s", err, exitInterrupted, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted:\n%s", errb.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "se.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Count(string(data), "\n") - 1
	var man struct {
		Complete bool
		Points   int
		Missing  []map[string]float64
	}
	data, err = os.ReadFile(filepath.Join(dir, "se.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	t.Logf("interrupted after %d of %d points", rows, points)
	if man.Complete || man.Points != rows || rows+len(man.Missing) != points || len(man.Missing) == 0 {
		t.Errorf("%d rows; manifest complete %v, points %d, %d missing; want %d in all", rows, man.Complete, man.Points, len(man.Missing), points)
	}
	if len(man.Missing) > 0 && (man.Missing[0]["rho"] != 0.5 || man.Missing[len(man.Missing)-1]["alpha"] != 0.25) {
		t.Errorf("missing points %v ... %v", man.Missing[0], man.Missing[len(man.Missing)-1])
	}
	if rows > 0 {
		if _, err := os.Stat(filepath.Join(dir, "se.png")); err != nil {
			t.Errorf("plot: %v", err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("%s left behind", e.Name())
		}
	}
}

// TestInterruptedExitStatus checks that a command whose context is cancelled (as SIGINT
// cancels it) exits with status 130 after writing its outputs, and that the commands that
// write a row per grid point are the ones that stop early.
func TestInterruptedExitStatus(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := runContext(ctx, []string{"se", "--quiet", "--rho=0.5", "--alpha=0.1,0.2", "--gen-samples=0", "--out=" + filepath.Join(dir, "se.csv"), "--plot="}, &out, &errb)
	if code != exitInterrupted || !strings.Contains(errb.String(), "aim se: interrupted: wrote the 0 of 2 points") {
		t.Errorf("status %d, stderr %q; want %d", code, errb.String(), exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(dir, "se.json")); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{{[]string{"se"}, true}, {[]string{"amp"}, true}, {[]string{"gd"}, true}, {[]string{"smi", "amp"}, true},
		{[]string{"smi", "se"}, true}, {[]string{"smi"}, false}, {[]string{"thresholds"}, false}, {[]string{"sweep", "run"}, false}} {
		if got := stopsEarly(tc.args); got != tc.want {
			t.Errorf("stopsEarly(%v) = %v", tc.args, got)
		}
	}
}
