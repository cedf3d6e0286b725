package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/web/mmkdtest"
)

// readmeSubmits are the `bin/mmkctl submit` lines of the README's quick
// start, as written (comments cut).
func readmeSubmits(t *testing.T, readme string) [][]string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	inQuickStart, inCode := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inQuickStart = line == "## Quick start"
		case strings.HasPrefix(line, "```"):
			inCode = !inCode
		case inQuickStart && inCode && strings.HasPrefix(line, "bin/mmkctl submit "):
			cmd, _, _ := strings.Cut(line, " #")
			if strings.ContainsAny(cmd, `'"$;|&`) {
				t.Fatalf("README: %q: keep the quick start's submits to plain words, or teach this test the shell", line)
			}
			out = append(out, strings.Fields(cmd)[1:])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadmeQuickStart runs the README's quick-start submits as written,
// from the checkout's root, against an mmkd on fake GPUs (mmkdtest) that
// runs them (issue 37, item 2: `mmkctl submit -- cat README.md` failed,
// the job running in mmkd's job directory). Every job must start and,
// once ended, have succeeded; the README's own `cat README.md` prints
// the README.
func TestReadmeQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts jobs")
	}
	d := mmkdtest.Start(t, []fakegpu.GPUSpec{
		{Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+2g.20gb@4+1g.10gb@6"},
		{Model: "H200-141GB"},
	})
	t.Chdir("../..")
	submits := readmeSubmits(t, "README.md")
	if len(submits) == 0 {
		t.Fatal("README: no `bin/mmkctl submit` in the quick start")
	}
	readmeTop, _, _ := strings.Cut(mustRead(t, "README.md"), "\n")
	catSeen := false
	for _, args := range submits {
		line := "mmkctl " + strings.Join(args, " ")
		out, err := mmkctl(t, append([]string{args[0], "--addr", d.URL, "-o", "json"}, args[1:]...)...)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var v map[string]string
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s printed %q: %v", line, out, err)
		}
		j := waitStarted(t, d, v["id"])
		if j.State.Terminal() && j.State != jobs.Succeeded {
			logs, _ := mmkctl(t, "logs", "--addr", d.URL, j.ID)
			t.Errorf("%s: %s (%s); its output:\n%s", line, j.State, j.Reason, logs)
		}
		if strings.HasSuffix(line, "-- cat README.md") {
			catSeen = true
			logs, err := mmkctl(t, "logs", "--addr", d.URL, j.ID)
			if err != nil || !strings.HasPrefix(logs, readmeTop) {
				t.Errorf("%s: its output %q (%v), want the README", line, logs, err)
			}
		}
		if !j.State.Terminal() {
			if _, err := mmkctl(t, "cancel", "--addr", d.URL, j.ID); err != nil {
				t.Errorf("cancel %s: %v", j.ID, err)
			}
		}
	}
	if !catSeen {
		t.Error("README: the quick start has no `bin/mmkctl submit -- cat README.md`")
	}
}

// waitStarted waits until a job runs or has ended: a job that ends at
// once (cat) is waited for to its end.
func waitStarted(t *testing.T, d *mmkdtest.Daemon, id string) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := d.Node.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State.Terminal() || (j.State == jobs.Running && time.Since(j.StartedAt) > 500*time.Millisecond) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s (%s) after 30 s", id, j.State, j.Reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeOrder: the README opens with what mmk is and its quick start;
// the status, with its numbers, comes after (issue 37, item 10).
func TestReadmeOrder(t *testing.T) {
	readme := mustRead(t, "../../README.md")
	quick := strings.Index(readme, "\n## Quick start\n")
	status := strings.Index(readme, "\n## Status\n")
	if quick < 0 || status < 0 {
		t.Fatalf("README: quick start at %d, status at %d: want both", quick, status)
	}
	if status < quick {
		t.Errorf("README: the status (byte %d) comes before the quick start (byte %d)", status, quick)
	}
	if intro := strings.Count(readme[:quick], "\n"); intro > 12 {
		t.Errorf("README: %d lines before the quick start, want at most 12", intro)
	}
}

// TestMakeHelp: `make help` lists every target the Makefile documents
// with a `## name: text` comment, with its text (issue 37, item 10).
func TestMakeHelp(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "help")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(mustRead(t, "../../Makefile"), "\n") {
		rest, ok := strings.CutPrefix(line, "## ")
		if !ok {
			continue
		}
		name, text, ok := strings.Cut(rest, ": ")
		if !ok {
			continue
		}
		n++
		words := strings.Fields(text)
		if !strings.Contains(string(out), name) || !strings.Contains(string(out), strings.Join(words[:min(4, len(words))], " ")) {
			t.Errorf("make help lacks %s: %s\n%s", name, text, out)
		}
	}
	if n < 10 {
		t.Errorf("the Makefile documents %d targets, want the ## comments found", n)
	}
}
