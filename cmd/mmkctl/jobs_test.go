package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/web"
	"github.com/mmkgpu/mmk/web/webtest"
)

// startMMKD serves the API over a fake node, with token (if not empty).
func startMMKD(t *testing.T, token string) (*webtest.FakeNode, string) {
	t.Helper()
	n := webtest.NewFakeNode(t.TempDir())
	srv := httptest.NewServer(web.New(web.Options{Node: n, Token: token, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	return n, srv.URL
}

// submitJob submits through the CLI and returns the id it printed.
func submitJob(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, err := mmkctl(t, append([]string{"submit", "--addr", addr, "-o", "json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("submit -o json printed %q: %v", out, err)
	}
	if len(v) != 1 || !jobs.ValidID(v["id"]) {
		t.Fatalf("submit -o json printed %q, want exactly {\"id\": ...}", out)
	}
	return v["id"]
}

func TestSubmitCommand(t *testing.T) {
	n, addr := startMMKD(t, "")
	work := t.TempDir()
	id := submitJob(t, addr, "--online", "--slo", "p99=25ms", "--priority", "2", "--memory", "8GiB", "--name", "bert", "--env", "A=1", "--env", "B=x=y",
		"--workdir", work, "--workload", "bert:8:infer", "--task-key", "bert_bs8", "--", "python3", "serve.py", "--port", "80")
	j, err := n.Job(id)
	if err != nil {
		t.Fatal(err)
	}
	s := j.Spec
	if s.Kind != jobs.Online || *s.Priority != 2 || s.MemoryMiB != 8192 || s.Name != "bert" || s.Env["A"] != "1" || s.Env["B"] != "x=y" ||
		s.WorkDir != work || *s.Workload != (jobs.Workload{Model: "bert", Batch: 8, Mode: "infer"}) || s.TaskKey != "bert_bs8" ||
		strings.Join(s.Command, " ") != "python3 serve.py --port 80" || s.SLO != "p99=25ms" {
		t.Errorf("spec %+v", s)
	}
	for args, want := range map[string]string{
		"--slo p99=25ms":          "flag --slo: only an online job has a latency target: add --online",
		"--online --slo p99=25":   `flag --slo: latency target "p99=25": the bound "25" has no unit`,
		"--online --slo p99.9=0x": "below 1x",
	} {
		_, err := mmkctl(t, append(append([]string{"submit", "--addr", addr}, strings.Fields(args)...), "--", "true")...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("submit %s: %v, want %q", args, err, want)
		}
	}
	// The command's own flags need no "--" once it has started.
	id = submitJob(t, addr, "python3", "train.py", "--lr", "0.1")
	if j, _ := n.Job(id); j.Spec.Kind != jobs.Offline || j.Spec.Priority != nil || strings.Join(j.Spec.Command, " ") != "python3 train.py --lr 0.1" {
		t.Errorf("default spec %+v", j.Spec)
	}

	out, err := mmkctl(t, "submit", "--addr", addr, "--idempotency-key", "k1", "--", "true")
	if err != nil || !strings.Contains(out, "pending") {
		t.Fatalf("table: %q %v", out, err)
	}
	again, err := mmkctl(t, "submit", "--addr", addr, "--idempotency-key", "k1", "--", "true")
	if err != nil || !strings.Contains(again, "submitted before") || strings.Fields(again)[3] != strings.Fields(out)[3] {
		t.Errorf("repeat: %q (first %q) %v", again, out, err)
	}
}

func TestJobCommands(t *testing.T) {
	n, addr := startMMKD(t, "")
	a := submitJob(t, addr, "--name", "train-a", "--", "python3", "a.py")
	b := submitJob(t, addr, "--online", "--name", "infer-b", "--", "python3", "b.py")
	if err := n.SetState(a, jobs.Running, "started"); err != nil {
		t.Fatal(err)
	}

	out, err := mmkctl(t, "job", "--addr", addr, a, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if j["state"] != "running" || j["id"] != a || len(j["events"].([]any)) != 2 {
		t.Errorf("job -o json: %s", out)
	}

	tests := []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"job", a}, []string{"State:", "running (started)", "Command:", "python3 a.py", "Events:", "pending", "submitted"}, nil},
		{[]string{"jobs"}, []string{"ID", "PLACEMENT", a, b, "train-a", "infer-b"}, nil},
		{[]string{"jobs", "--state", "running"}, []string{a}, []string{b}},
		{[]string{"jobs", "--type", "online", "--limit", "1"}, []string{b}, []string{a}},
		{[]string{"jobs", "--state", "failed"}, []string{"no jobs"}, nil},
		{[]string{"cancel", b, "--reason", "not needed"}, []string{b, "cancelled (not needed)"}, nil},
	}
	for _, tt := range tests {
		out, err := mmkctl(t, append(tt.args, "--addr", addr)...)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, out)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(out, w) {
				t.Errorf("%v: output has %q:\n%s", tt.args, w, out)
			}
		}
	}
	out, err = mmkctl(t, "jobs", "--addr", addr, "-o", "json")
	var list []jobs.Job
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].ID != b {
		t.Errorf("jobs -o json: %s %v", out, err)
	}
}

func TestLogsCommand(t *testing.T) {
	n, addr := startMMKD(t, "")
	id := submitJob(t, addr, "--", "true")
	path, err := n.LogPath(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", []byte("epoch 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("epoch 2\nepoch 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.SetState(id, jobs.Succeeded, ""); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", id}, "epoch 1\nepoch 2\nepoch 3\n"},
		{[]string{"logs", "--tail", "2", id}, "epoch 2\nepoch 3\n"},
		{[]string{"logs", "--tail-bytes", "8", id}, "epoch 3\n"},
		{[]string{"logs", "-f", id}, "epoch 1\nepoch 2\nepoch 3\n"},
	} {
		out, err := mmkctl(t, append(tt.args, "--addr", addr)...)
		if err != nil || out != tt.want {
			t.Errorf("%v: %q %v, want %q", tt.args, out, err, tt.want)
		}
	}
}

func TestNodePlanCommand(t *testing.T) {
	n, addr := startMMKD(t, "")
	n.SetPlan(node.PlanView{
		GPUs: []node.GPUView{{Index: 0, Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0+3g.40gb@4", SMs: 132, MemoryMiB: 81559,
			Instances: []node.InstanceView{
				{Index: 0, Profile: "3g.40gb", Start: 0, Size: 4, SMs: 60, MemoryMiB: 40192, MPS: true, Jobs: []node.PlacedView{
					{ID: "0000000000000001", Name: "bert", Kind: jobs.Online, State: jobs.Running, Percent: 60, Speed: 0.41},
					{ID: "0000000000000002", Name: "resnet", Kind: jobs.Offline, State: jobs.Running, Percent: 40, Speed: 0.22}}},
				{Index: 1, Profile: "3g.40gb", Start: 4, Size: 4, SMs: 60, MemoryMiB: 40192},
			}}},
		Waiting: []string{"0000000000000003"}, Total: 0.63, Decisions: 4,
	})
	n.AddReconfig(jobs.Reconfig{Time: time.Now(), GPU: 0, From: "7g.80gb@0", To: "3g.40gb@0+3g.40gb@4", Gain: 0.2, Cause: "arrival of job 0000000000000002", Duration: 1500 * time.Millisecond})
	// The offline job is masked for the online one (issue 53, item 3).
	now := time.Now()
	n.Put(jobs.Job{ID: "0000000000000002", Spec: jobs.Spec{Name: "resnet", Kind: jobs.Offline, Command: []string{"x"}}, State: jobs.Running, CreatedAt: now, UpdatedAt: now,
		Restraint: &jobs.Restraint{State: "masked", How: "masked to 33 TPCs", Rung: "tpcs=0.25", For: []string{"0000000000000001"}}})
	out, err := mmkctl(t, "plan", "--addr", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"3g.40gb@0+3g.40gb@4", "GPU 0 instances:", "bert", "60%", "resnet", "40%", "running (masked)", "Waiting (1):", "1  0000000000000003",
		"Predicted throughput 0.63, 4 placement decisions", "Last reconfigurations:", "7g.80gb@0", "+0.20", "arrival of job 0000000000000002"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan lacks %q:\n%s", w, out)
		}
	}
	out, err = mmkctl(t, "plan", "--addr", addr, "-o", "json")
	var np nodePlan
	if err != nil || json.Unmarshal([]byte(out), &np) != nil || np.Plan.Decisions != 4 || len(np.Reconfigs) != 1 {
		t.Errorf("plan -o json: %s %v", out, err)
	}
}

// TestJobCommandErrors checks that failures exit with an error that says
// what mmkd said, and which field.
func TestJobCommandErrors(t *testing.T) {
	n, addr := startMMKD(t, "")
	done := submitJob(t, addr, "--", "true")
	if err := n.SetState(done, jobs.Succeeded, ""); err != nil {
		t.Fatal(err)
	}
	_, secured := startMMKD(t, "s3cret")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown job", []string{"job", "--addr", addr, "0000000000000000"}, "mmkd: job 0000000000000000: no such job"},
		{"malformed id", []string{"job", "--addr", addr, "nope"}, `is not a job id`},
		{"malformed id names the field", []string{"cancel", "--addr", addr, "nope"}, "[field id]"},
		{"bad priority", []string{"submit", "--addr", addr, "--priority", "12", "--", "x"}, "mmkd: priority: must be 0 (highest) to 9"},
		{"reserved env", []string{"submit", "--addr", addr, "--env", "CUDA_VISIBLE_DEVICES=1", "--", "x"}, "env.CUDA_VISIBLE_DEVICES: is set by mmk"},
		{"bad workload mode", []string{"submit", "--addr", addr, "--workload", "resnet50:32:eval", "--", "x"}, "workload.mode: must be train or infer"},
		{"cancel an unknown job among others", []string{"cancel", "--addr", addr, done, "0000000000000000"}, "could not cancel 1 of 2 jobs: 0000000000000000"},
		{"bad list filter", []string{"jobs", "--addr", addr, "--state", "done"}, `state "done" is not one of`},
		{"no command", []string{"submit", "--addr", addr}, "requires at least 1 arg"},
		{"online and offline", []string{"submit", "--addr", addr, "--online", "--offline", "--", "x"}, "none of the others can be"},
		{"bad memory", []string{"submit", "--addr", addr, "--memory", "lots", "--", "x"}, "flag --memory:"},
		{"memory without a unit", []string{"submit", "--addr", addr, "--memory", "8", "--", "x"}, `flag --memory: memory size "8" has no unit: write 8GiB or 8MiB, say`},
		{"bad env", []string{"submit", "--addr", addr, "--env", "NOVALUE", "--", "x"}, `flag --env: "NOVALUE" is not K=V`},
		{"bad workload", []string{"submit", "--addr", addr, "--workload", "resnet50", "--", "x"}, "flag --workload:"},
		{"bad address", []string{"jobs", "--addr", "ftp://x"}, `mmkd address "ftp://x"`},
		{"mmkd down", []string{"jobs", "--addr", closed}, "mmkd is not reachable at http://" + closed + ": connection refused"},
		// An empty data directory of its own: the default one may hold a
		// token (the machine's, after make run; clitest's here).
		{"no token", []string{"jobs", "--addr", secured, "--data-dir", t.TempDir()}, "requires a token: send Authorization: Bearer <token> [field Authorization] (give the token with --token or MMK_TOKEN"},
		{"wrong token", []string{"jobs", "--addr", secured, "--token", "guess"}, "the bearer token is not valid"},
		{"bad tail", []string{"logs", "--addr", addr, "--tail", "-1", done}, "flag --tail: -1 is negative"},
		{"tail twice", []string{"logs", "--addr", addr, "--tail", "1", "--tail-bytes", "1", done}, "flags --tail and --tail-bytes: give one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mmkctl(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestServerFromEnvironment checks MMK_ADDR (host:port, no scheme) and
// MMK_TOKEN.
func TestServerFromEnvironment(t *testing.T) {
	_, addr := startMMKD(t, "s3cret")
	t.Setenv("MMK_ADDR", strings.TrimPrefix(addr, "http://"))
	t.Setenv("MMK_TOKEN", "s3cret")
	if out, err := mmkctl(t, "jobs"); err != nil || !strings.Contains(out, "no jobs") {
		t.Errorf("jobs from the environment: %q %v", out, err)
	}
	// A flag wins over the environment.
	if _, err := mmkctl(t, "jobs", "--token", "other"); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("--token over MMK_TOKEN: %v", err)
	}
}

// TestSocketByDefault: without --addr, mmkctl reaches mmkd over the Unix
// socket in the data directory (--data-dir or MMK_DATA_DIR), where mmkd
// knows the caller by its user and asks no token; with --addr it reads
// the token from the data directory.
func TestSocketByDefault(t *testing.T) {
	dir := t.TempDir()
	n := webtest.NewFakeNode(t.TempDir())
	api := web.New(web.Options{Node: n, Token: "s3cret", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, err := web.ListenUnix(filepath.Join(dir, "mmkd.sock"), 0o660, -1)
	if err != nil {
		t.Fatal(err)
	}
	srv := web.NewHTTPServer(api.Handler())
	go func() { _ = srv.Serve(web.PeerListener(ln)) }()
	t.Cleanup(func() { srv.Close() })
	t.Setenv("MMK_ADDR", "")
	t.Setenv("MMK_TOKEN", "")
	out, err := mmkctl(t, "submit", "--data-dir", dir, "-o", "json", "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	var sub struct{ ID string }
	if err := json.Unmarshal([]byte(out), &sub); err != nil {
		t.Fatalf("submit printed %q: %v", out, err)
	}
	j, err := n.Job(sub.ID)
	if err != nil {
		t.Fatalf("submit over the socket printed %q: %v", out, err)
	}
	if j.Owner == nil || j.Owner.UID != os.Geteuid() {
		t.Errorf("owner %+v, want the caller's uid %d (SO_PEERCRED)", j.Owner, os.Geteuid())
	}
	t.Setenv("MMK_DATA_DIR", dir)
	if out, err := mmkctl(t, "jobs"); err != nil || !strings.Contains(out, j.ID) {
		t.Errorf("jobs over the socket of MMK_DATA_DIR: %q %v", out, err)
	}
	// Over TCP the token is read from the data directory.
	tcp := httptest.NewServer(api.Handler())
	t.Cleanup(tcp.Close)
	if _, err := mmkctl(t, "jobs", "--addr", tcp.URL); err == nil || !strings.Contains(err.Error(), "requires a token") {
		t.Errorf("TCP without a token file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := mmkctl(t, "jobs", "--addr", tcp.URL); err != nil || !strings.Contains(out, j.ID) {
		t.Errorf("TCP with the data directory's token: %q %v", out, err)
	}
	if _, err := mmkctl(t, "jobs", "--data-dir", t.TempDir()); err == nil || !strings.Contains(err.Error(), "not reachable at unix:") {
		t.Errorf("no socket: %v", err)
	}
}

// TestListPageIsMMKDsLargest: mmkctl asks for pages of mmkd's largest
// size (web.MaxListLimit, which mmkctl does not import): a larger one
// would be refused with 400, a smaller one costs requests.
func TestListPageIsMMKDsLargest(t *testing.T) {
	if listPage != web.MaxListLimit {
		t.Errorf("listPage %d, web.MaxListLimit %d: want them equal", listPage, web.MaxListLimit)
	}
}

// TestSubmitWorkdir: a job starts where it was submitted (issue 37, item
// 2: `mmkctl submit -- cat README.md` ran in mmkd's job directory);
// --workdir overrides, a relative one taken from the current directory,
// and a directory the job cannot use is refused by name.
func TestSubmitWorkdir(t *testing.T) {
	n, addr := startMMKD(t, "")
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	t.Chdir(cwd)
	tests := []struct {
		name string
		args []string
		want string
		err  string
	}{
		{"the current directory by default", nil, cwd, ""},
		{"--workdir", []string{"--workdir", other}, other, ""},
		{"a relative --workdir", []string{"--workdir", "sub"}, filepath.Join(cwd, "sub"), ""},
		{"a missing --workdir", []string{"--workdir", "nowhere"}, "", `workdir: no such directory (got "` + filepath.Join(cwd, "nowhere") + `")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"submit", "--addr", addr, "-o", "json"}, tt.args...), "--", "cat", "README.md")
			out, err := mmkctl(t, args...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]string
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatal(err)
			}
			j, err := n.Job(v["id"])
			if err != nil {
				t.Fatal(err)
			}
			if j.Spec.WorkDir != tt.want {
				t.Errorf("workdir %q, want %q", j.Spec.WorkDir, tt.want)
			}
			show, err := mmkctl(t, "job", "--addr", addr, j.ID)
			if err != nil || !strings.Contains(show, "Workdir:") || !strings.Contains(show, tt.want) {
				t.Errorf("job shows %q %v, want the workdir %s", show, err, tt.want)
			}
		})
	}
}

// TestWaitingSaysWhy: a waiting job says what holds it, since when and
// where it stands, in `jobs -o wide`, `job` and `plan` (by name), and
// those commands' JSON (issue 37, item 3: an empty REASON, nothing in
// `job`, bare ids in `plan`).
func TestWaitingSaysWhy(t *testing.T) {
	n, addr := startMMKD(t, "")
	id := submitJob(t, addr, "--name", "big-train", "--memory", "100GiB", "--", "python3", "train.py")
	w := jobs.Wait{Class: node.WaitMemory, Reason: "needs 100 GiB; the most free is 20 GiB on GPU 2 (whole GPU)",
		Since: time.Now().Add(-5 * time.Minute), Position: 1}
	if err := n.SetWait(id, w); err != nil {
		t.Fatal(err)
	}
	n.SetPlan(node.PlanView{Waiting: []string{id}, WaitingTotal: 1, WaitingJobs: []node.WaitingView{{ID: id, Name: "big-train", Wait: w}},
		WaitingByClass: map[string]int{node.WaitMemory: 1}})
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"jobs", "-o", "wide"}, []string{"REASON", w.Reason}},
		{[]string{"job", id}, []string{"Waiting:", w.Reason, "Waiting since:", "(5m)", "Queue position:", "1 of the waiting jobs"}},
		{[]string{"job", id, "-o", "json"}, []string{`"wait": {`, `"class": "memory"`, `"position": 1`}},
		{[]string{"plan"}, []string{"Waiting (1):", "big-train (" + id + ")", w.Reason}},
	}
	for _, tt := range tests {
		out, err := mmkctl(t, append(tt.args, "--addr", addr)...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		for _, want := range tt.want {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %q:\n%s", tt.args, want, out)
			}
		}
	}
}
