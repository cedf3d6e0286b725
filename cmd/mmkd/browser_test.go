package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mmkgpu/mmk/configs"
	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/node"
	"github.com/mmkgpu/mmk/partitioner"
	"github.com/mmkgpu/mmk/partitioner/fakegpu"
	"github.com/mmkgpu/mmk/partitioner/nvmlbackend"
	"github.com/mmkgpu/mmk/web"
	"github.com/mmkgpu/mmk/web/uitest"
	"github.com/mmkgpu/mmk/web/webtest"
)

// browserTimeout bounds each wait on the page: generous, since CI's
// machine may be busy; the waits end as soon as the page shows what they
// wait for.
const browserTimeout = 30 * time.Second

// startBrowser starts headless Chromium, or skips the test where there is
// none, unless MMK_BROWSER_TEST=required (CI), where that fails it.
func startBrowser(t *testing.T) *uitest.Browser {
	t.Helper()
	path, err := uitest.Find()
	if err != nil {
		if os.Getenv("MMK_BROWSER_TEST") == "required" {
			t.Fatalf("MMK_BROWSER_TEST=required: %v", err)
		}
		t.Skipf("skipped: %v (MMK_BROWSER_TEST=required makes this a failure)", err)
	}
	b, err := uitest.Start(context.Background(), path, 1280, 800, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// page runs chromedp steps, failing the test with what the page
// reported when one fails.
func page(t *testing.T, b *uitest.Browser, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 2*browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage problems: %v", what, err, b.Problems())
	}
}

// waitFor waits until the JavaScript expression is truthy.
func waitFor(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(browserTimeout), chromedp.WithPollingInterval(20*time.Millisecond))(ctx, tg)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", expr, err)
		}
		return nil
	})
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *uitest.Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// checkPage fails the test if the page asked any host but origin for
// anything, or reported an exception, a console error or a CSP
// violation.
func checkPage(t *testing.T, b *uitest.Browser, origin, secret string) {
	t.Helper()
	reqs := b.Requests()
	if len(reqs) < 5 {
		t.Errorf("only %d requests recorded: %v", len(reqs), reqs)
	}
	if f := b.Foreign(origin); len(f) > 0 {
		t.Errorf("requests to another host than %s: %v", origin, f)
	}
	for _, r := range reqs {
		if secret != "" && strings.Contains(r, secret) {
			t.Errorf("the token is in a URL: %s", r)
		}
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(p, "\n"))
	}
}

// startTokenDaemon starts mmkd (this test binary) on the fake GPUs of the
// embedded defaults with a bearer token, jobs.allow_root on; env adds
// (or overrides) environment variables.
func startTokenDaemon(t *testing.T, token string, env ...string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "--backend", "fake", "--data-dir", t.TempDir(), "--listen", addr, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "MMK_TEST_AS_MMKD=1", "MMK_KERNELSCHED_ENABLED=false", "MMK_SERVER_TOKEN="+token,
		"MMK_JOBS_ALLOW_ROOT=true")
	cmd.Env = append(cmd.Env, env...)
	d := &daemon{cmd: cmd, addr: addr, log: &syncBuffer{}}
	cmd.Stderr = d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Jobs outlive mmkd: end the test's before stopping it.
		for _, j := range d.authJobs(t, token) {
			if !j.State.Terminal() {
				_, _ = d.authDo(token, "POST", "/api/v1/jobs/"+j.ID+"/cancel")
			}
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(browserTimeout)
	for {
		if body, err := d.authDo(token, "GET", "/readyz"); err == nil && strings.Contains(body, "ready") {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("mmkd did not become ready:\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// authDo sends a request with the token; a status other than 2xx is an
// error.
func (d *daemon) authDo(token, method, path string) (string, error) {
	req, err := http.NewRequest(method, "http://"+d.addr+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return string(b), fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return string(b), nil
}

func (d *daemon) authJobs(t *testing.T, token string) []jobs.Job {
	body, err := d.authDo(token, "GET", "/api/v1/jobs")
	if err != nil {
		t.Log(err)
		return nil
	}
	var list []jobs.Job
	_ = json.Unmarshal([]byte(body), &list)
	return list
}

// TestDashboard drives the dashboard in headless Chromium against a real
// mmkd on the fake GPUs, with a token: the page asks for it; it draws
// the three GPUs as the default configuration cuts them; a job submitted
// through the form appears and goes from running to succeeded without a
// reload, its name shown as text, not HTML; a job cancelled from its
// page shows cancelled, and its log is followed. Every request the
// browser made went to the daemon, none carried the token in its URL,
// and the page reported no error.
func TestDashboard(t *testing.T) {
	b := startBrowser(t)
	const token = "e2e-Secret-7f3a9c"
	d := startTokenDaemon(t, token)
	origin := "http://" + d.addr

	// The page loads; the stream's 401 brings up the token dialog,
	// which says where the token is: here the configuration's
	// server.token (MMK_SERVER_TOKEN), not in a file.
	page(t, b, "load and sign in",
		chromedp.Navigate(origin+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		waitFor(`document.querySelector('#token-why').textContent.includes('server.token')`),
	)
	if why := eval[string](t, b, `document.querySelector('#token-why').textContent`); strings.Contains(why, "Authorization") || strings.Contains(why, "token file") {
		t.Errorf("the dialog says %q: want the setting named, not the API's error", why)
	}
	page(t, b, "sign in",
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.ID("token-go")),
		waitFor(`document.querySelector('#conn').dataset.state === 'live'`),
		// Marks this page: a reload would lose it.
		chromedp.Evaluate[chromedp.Void](`window.__mmkNoReload = true`),
	)

	t.Run("GPUs", func(t *testing.T) {
		page(t, b, "overview", waitFor(`document.querySelectorAll('article.gpu').length === 3`))
		type gpuCard struct {
			Layout    string   `json:"layout"`
			Instances []string `json:"instances"`
			Compute   int      `json:"compute"`
			Memory    int      `json:"memory"`
			Free      int      `json:"free"`
		}
		cards := eval[[]gpuCard](t, b, `[...document.querySelectorAll('article.gpu')].map(g => ({
			layout: g.dataset.layout,
			instances: [...g.querySelectorAll('.inst:not(.free) .inst-head')].map(e => e.querySelector('b').textContent + ' ' + e.querySelector('.inst-what').textContent),
			compute: g.querySelectorAll('.strip.s7 .slice').length,
			memory: g.querySelectorAll('.strip.s8 .slice').length,
			free: g.querySelectorAll('.strip.s8 .slice.free').length}))`)
		// Each instance by its name, as everywhere (issue 37, item 5:
		// before, by its profile and placement), those beside it.
		want := []gpuCard{
			{"4g.40gb@0+2g.20gb@4+1g.10gb@6", []string{"gpu0/gi1 4g.40gb@0", "gpu0/gi2 2g.20gb@4", "gpu0/gi3 1g.10gb@6"}, 7, 8, 1},
			{"3g.40gb@0+3g.40gb@4", []string{"gpu1/gi1 3g.40gb@0", "gpu1/gi2 3g.40gb@4"}, 7, 8, 0},
			{"whole", []string{"gpu2 whole GPU"}, 7, 8, 0},
		}
		if fmt.Sprint(cards) != fmt.Sprint(want) {
			t.Errorf("GPU cards\n got %v\nwant %v", cards, want)
		}
	})

	t.Run("health", func(t *testing.T) {
		// The readings the page shows are the fake GPUs' at the time of
		// the sample it shows: another fake of the same seed and GPUs,
		// read at that time (or the second before: the daemon reads the
		// GPUs, then its clock), answers the same.
		page(t, b, "health", waitFor(`document.querySelectorAll('#gpus .health .hcell').length === 9`))
		type shown struct {
			At   string            `json:"at"`
			GPUs map[string]string `json:"gpus"`
		}
		ctx, cancel := context.WithTimeout(b.Ctx, browserTimeout)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](`(async () => {
			const o = await import(new URL('ui/overview.js', document.baseURI).href);
			const gpus = {};
			for (const el of document.querySelectorAll('#gpus .health')) {
				for (const m of el.querySelectorAll('[data-metric]:not(svg)')) gpus[el.dataset.gpu + ' ' + m.dataset.metric] = m.textContent;
			}
			return {at: o.health.at, gpus};
		})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, got.At)
		if err != nil {
			t.Fatalf("the page's sample time %q: %v", got.At, err)
		}
		cfg, err := configs.Load(configs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var tried []map[string]string
		for _, when := range []time.Time{at, at.Add(-time.Second)} {
			want := fakeHealth(t, cfg.GPU.Fake.Seed, cfg.GPU.Fake.GPUs, when)
			if fmt.Sprint(want) == fmt.Sprint(got.GPUs) {
				return
			}
			tried = append(tried, want)
		}
		t.Errorf("the page shows %v at %v,\nthe fake GPUs read %v", got.GPUs, at, tried)
	})

	var shortID string
	t.Run("submit", func(t *testing.T) {
		const name = `e2e <b>short</b>`
		page(t, b, "submit through the form",
			chromedp.Click(chromedp.CSS(`nav a[data-view="jobs"]`)),
			chromedp.Click(chromedp.ID("new-job")),
			chromedp.WaitVisible(chromedp.ID("s-command")),
			chromedp.SendKeys(chromedp.ID("s-command"), "sh\n-c\necho hello from e2e; sleep 2"),
			chromedp.SendKeys(chromedp.ID("s-name"), name),
			chromedp.SetValue(chromedp.ID("s-memory"), "2GiB"),
			// Record every state the row shows, from its first.
			chromedp.Evaluate[chromedp.Void](`window.__states = [];
				new MutationObserver(() => {
					for (const tr of document.querySelectorAll('#jobs-body tr')) {
						if (tr.querySelector('td.name').textContent !== `+jsString(name)+`) continue;
						if (window.__states.at(-1) !== tr.dataset.state) window.__states.push(tr.dataset.state);
					}
				}).observe(document.getElementById('jobs-body'), {subtree: true, childList: true, attributes: true, characterData: true});`),
			chromedp.Click(chromedp.ID("s-go")),
			waitFor(`document.querySelector('#s-result').textContent.startsWith('Submitted')`),
			waitFor(`(window.__states || []).at(-1) === 'succeeded'`),
		)
		states := eval[[]string](t, b, `window.__states`)
		if len(states) < 2 || states[len(states)-1] != "succeeded" || !containsAny(states, "pending", "placed", "running") {
			t.Errorf("the row showed %v, want a live change to succeeded", states)
		}
		// The name is text: no <b> element made of it.
		if n := eval[int](t, b, `document.querySelectorAll('#jobs-body td.name b').length`); n != 0 {
			t.Errorf("the job's name was parsed as HTML (%d <b>)", n)
		}
		shortID = eval[string](t, b, `[...document.querySelectorAll('#jobs-body tr')].find(tr => tr.querySelector('td.name').textContent === `+jsString(name)+`).dataset.job`)
		if j := d.authJob(t, token, shortID); j.State != jobs.Succeeded || j.Spec.Name != name || len(j.Spec.Command) != 3 || j.MemoryMiB != 2048 {
			t.Errorf("the daemon has %+v", j)
		}
	})

	t.Run("submit with a target and a directory", func(t *testing.T) {
		// Issue 53, item 8: the form takes a latency target and a working
		// directory, checked by mmkd as the CLI's are: a bad target is
		// refused naming its field, which the form marks.
		work := t.TempDir()
		page(t, b, "a bad target is refused, the field marked",
			chromedp.Click(chromedp.CSS(`nav a[data-view="jobs"]`)),
			chromedp.Click(chromedp.ID("new-job")),
			chromedp.WaitVisible(chromedp.ID("s-command")),
			chromedp.Evaluate[chromedp.Void](`(() => {
				const set = (id, v) => { document.getElementById(id).value = v; };
				set('s-command', '["sleep", "1"]'); set('s-name', 'e2e-online');
				set('s-type', 'online'); set('s-slo', 'p99=25'); set('s-workdir', `+jsString(work)+`);
			})()`),
			chromedp.Click(chromedp.ID("s-go")),
			waitFor(`document.querySelector('#s-result').className.includes('error')`),
		)
		if msg := eval[string](t, b, `document.querySelector('#s-result').textContent`); !strings.Contains(msg, `has no unit`) {
			t.Errorf("the form says %q, want the target's error", msg)
		}
		if !eval[bool](t, b, `document.getElementById('s-slo').classList.contains('bad')`) {
			t.Error("the target's field is not marked")
		}
		page(t, b, "a good target and directory are taken",
			chromedp.Evaluate[chromedp.Void](`document.getElementById('s-slo').value = 'p99=25ms'`),
			chromedp.Click(chromedp.ID("s-go")),
			waitFor(`document.querySelector('#s-result').textContent.includes('e2e-online')`),
		)
		id := eval[string](t, b, `document.querySelector('#s-result a').textContent.match(/\((\w+)\)/)[1]`)
		// The form as the next subtests expect it: an offline job.
		page(t, b, "the form back to an offline job",
			chromedp.Evaluate[chromedp.Void](`for (const [id, v] of [['s-type', 'offline'], ['s-slo', ''], ['s-workdir', '']]) document.getElementById(id).value = v`),
		)
		if j := d.authJob(t, token, id); j.Spec.SLO != "p99=25ms" || j.Spec.WorkDir != work || j.Spec.Kind != jobs.Online {
			t.Errorf("the daemon has %+v", j.Spec)
		}
		// It ends before the next subtests count the memory requested.
		for end := time.Now().Add(20 * time.Second); !d.authJob(t, token, id).State.Terminal(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the online job is %s after 20 s", d.authJob(t, token, id).State)
			}
		}
	})

	t.Run("log", func(t *testing.T) {
		page(t, b, "a finished job's page shows its log",
			chromedp.Evaluate[chromedp.Void](`location.hash = '#/jobs/`+shortID+`'`),
			waitFor(`document.querySelector('#job-log').textContent.includes('hello from e2e')`),
			waitFor(`document.querySelector('#job-state').textContent === 'succeeded'`),
			waitFor(`document.querySelector('#job-events').textContent.includes('succeeded')`),
		)
	})

	t.Run("cancel", func(t *testing.T) {
		page(t, b, "submit a long job and cancel it from its page",
			chromedp.Click(chromedp.CSS(`nav a[data-view="jobs"]`)),
			chromedp.Click(chromedp.ID("new-job")),
			chromedp.SetValue(chromedp.ID("s-command"), `["sleep", "600"]`),
			chromedp.SetValue(chromedp.ID("s-name"), "e2e-long"),
			chromedp.Click(chromedp.ID("s-go")),
			waitFor(`document.querySelector('#s-result').textContent.includes('e2e-long')`),
			chromedp.Click(chromedp.CSS(`#s-result a`)),
			waitFor(`document.querySelector('#job-state').textContent === 'running'`),
			waitFor(`document.querySelector('#job-details').textContent.includes('sleep')`),
			// Its GPU use as the fake GPUs report it: sampled, no process of its own on them.
			waitFor(`!document.querySelector('#job-usage').hidden && document.querySelector('#job-usage-now').textContent.includes('0 processes')`),
			waitFor(`document.querySelector('#job-usage-chart').querySelector('polygon.mem') !== null`),
			// On the overview, its instance's memory: its 2 GiB (the
			// form's, kept from the job before) requested of the H200's
			// 140 GiB, and what the fake GPUs measure there: no process,
			// 0 MiB.
			chromedp.Evaluate[chromedp.Void](`window.__jobPage = location.hash; location.hash = '#/'`),
			waitFor(`[...document.querySelectorAll('#gpus .inst')].some(i => i.querySelector('.job-name a')?.textContent === 'e2e-long' &&
				i.querySelector('.membar').dataset.measured === 'true' && i.querySelector('.memtext').textContent === '0 MiB used · 2 GiB requested of 140 GiB')`),
			chromedp.Evaluate[chromedp.Void](`location.hash = window.__jobPage`),
			waitFor(`document.querySelector('#job-state').textContent === 'running'`),
			chromedp.Click(chromedp.ID("job-cancel")),
			chromedp.WaitVisible(chromedp.ID("job-confirm-yes")),
			chromedp.Click(chromedp.ID("job-confirm-yes")),
			waitFor(`document.querySelector('#job-state').textContent === 'cancelled'`),
			waitFor(`document.querySelector('#job-events').textContent.includes('cancelled from the dashboard')`),
			waitFor(`document.querySelector('#job-cancel-box').hidden`),
		)
		id := eval[string](t, b, `location.hash.slice('#/jobs/'.length)`)
		if j := d.authJob(t, token, id); j.State != jobs.Cancelled || j.Spec.Name != "e2e-long" {
			t.Errorf("the daemon has %s %q", j.State, j.Spec.Name)
		}
		// The jobs table shows it cancelled too, without a reload, though
		// the table was hidden when the stream said so (its row was made
		// while the job ran).
		page(t, b, "the table",
			chromedp.Sleep(time.Second),
			chromedp.Click(chromedp.CSS(`nav a[data-view="jobs"]`)),
			waitFor(`document.querySelector('#jobs-body tr[data-job="`+id+`"]').dataset.state === 'cancelled'`),
		)
		// A GET answered late, with the job as it was before it ended,
		// does not take the table back: the page keeps the newer version.
		ctx, cancel := context.WithTimeout(b.Ctx, browserTimeout)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
			const s = await import(new URL('ui/store.js', document.baseURI).href);
			const j = s.state.jobs.get('`+id+`');
			s.putJobs([{...j, state: 'running', updatedAt: new Date(Date.parse(j.updatedAt) - 1000).toISOString()}]);
			return s.state.jobs.get('`+id+`').state + ' ' + document.querySelector('#jobs-body tr[data-job="`+id+`"]').dataset.state;
		})()`, chromedp.EvalAwaitPromise))
		if err != nil || got != "cancelled cancelled" {
			t.Errorf("after a stale GET the page holds and shows %q (%v), want cancelled", got, err)
		}
	})

	if !eval[bool](t, b, `window.__mmkNoReload === true`) {
		t.Error("the page reloaded")
	}
	checkPage(t, b, origin, token)
}

// TestDashboardSaysWhyNoNewJob: signed in with the token of an mmkd run
// as root without jobs.allow_root (a packaged node), the dashboard is
// root, whose jobs mmkd refuses: it shows no "New job" button, which
// could only answer "forbidden", but says why and how to submit. An mmkd
// not run as root runs the token holder's jobs: the button is there.
func TestDashboardSaysWhyNoNewJob(t *testing.T) {
	b := startBrowser(t)
	const token = "e2e-Secret-no-root-jobs"
	d := startTokenDaemon(t, token, "MMK_JOBS_ALLOW_ROOT=false")
	origin := "http://" + d.addr
	page(t, b, "load, sign in and open the jobs",
		chromedp.Navigate(origin+"/#/jobs"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.ID("token-go")),
		waitFor(`document.querySelector('#conn').dataset.state === 'live'`),
		waitFor(`!document.querySelector('#new-job').hidden || !document.querySelector('#new-job-off').hidden`),
	)
	button := eval[bool](t, b, `!document.querySelector('#new-job').hidden`)
	note := eval[string](t, b, `document.querySelector('#new-job-off').hidden ? '' : document.querySelector('#new-job-off').textContent`)
	if os.Geteuid() != 0 {
		if !button || note != "" {
			t.Errorf("mmkd runs as uid %d and runs its token holder's jobs: button shown %v, note %q", os.Geteuid(), button, note)
		}
		return
	}
	if button {
		t.Error(`the "New job" button is shown to root, whose jobs this mmkd refuses`)
	}
	for _, want := range []string{"root", "jobs.allow_root", "mmkctl submit", "usermod -aG mmk"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note %q does not say %q", note, want)
		}
	}
	checkPage(t, b, origin, token)
}

func (d *daemon) authJob(t *testing.T, token, id string) jobs.Job {
	t.Helper()
	body, err := d.authDo(token, "GET", "/api/v1/jobs/"+id)
	if err != nil {
		t.Fatal(err)
	}
	var j jobs.Job
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestDashboardOnFakeNode checks what the daemon of TestDashboard
// (kernel scheduling off, no reconfiguration, few jobs) does not show, on
// a fake node: two kernel schedulers with their counters, queues, tasks
// and a timeline drawn on a canvas; the plan page and its history,
// updated live; and 600 jobs, of which the table shows 100, updating
// only the rows of the jobs that change, with "show more" and filters.
func TestDashboardOnFakeNode(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	now := time.Now()
	span := func(task string, prio int, from, to time.Duration) server.Span {
		return server.Span{Task: task, Priority: prio, Start: now.Add(-from), End: now.Add(-to), Kernels: 10}
	}
	n.SetSchedulers([]node.SchedView{
		{Instance: "gpu0-3g.40gb-at0", Policy: "fikit+mmk",
			Counters: server.Counters{Tasks: 2, Kernels: 123456, Held: 4000, Filled: 321, FailOpens: 2, Went: 1},
			Queues:   [10]int{0, 0, 0, 0, 0, 17},
			Tasks: []server.TaskView{{Name: "serve", PID: 10, Priority: 0, Online: true, Free: true, Profiled: true},
				{Name: "train <i>x</i>", PID: 11, Priority: 5, Held: 17}},
			Timeline: []server.Span{span("serve", 0, 4*time.Second, 3900*time.Millisecond), span("train <i>x</i>", 5, 3900*time.Millisecond, time.Second)}},
		{Instance: "gpu2", Policy: "fikit+mmk"},
	})
	n.SetPlan(node.PlanView{GPUs: []node.GPUView{{Index: 0, Model: "H100-80GB", MIG: true, Layout: "3g.40gb@0", SMs: 132, MemoryMiB: 81559,
		Instances: []node.InstanceView{{Index: 0, Key: "gpu0-3g.40gb-at0", Profile: "3g.40gb", Start: 0, Size: 4, ComputeSlices: 3, SMs: 60, MemoryMiB: 40448}}}}})
	n.AddReconfig(jobs.Reconfig{GPU: 0, Cause: "arrival of job 06h0j875sbwd57xs", From: "7g.80gb@0", To: "3g.40gb@0",
		Steps: []string{"destroy GPU instance 7g.80gb@0", "create GPU instance 3g.40gb@0"}, Duration: 1234 * time.Millisecond})
	srv := serveFakeNode(t, n)

	page(t, b, "kernel schedulers",
		chromedp.Navigate(srv.URL+"/#/sched"),
		waitFor(`document.querySelectorAll('article.sched').length === 2`),
		waitFor(`document.querySelector('article.sched canvas.timeline').height > 0`),
	)
	type card struct {
		Instance string `json:"instance"`
		Counters string `json:"counters"`
		Held5    string `json:"held5"`
		Tasks    int    `json:"tasks"`
		Italic   int    `json:"italic"`
		Painted  bool   `json:"painted"`
	}
	got := eval[card](t, b, `(() => {
		const c = document.querySelector('article.sched');
		const cv = c.querySelector('canvas.timeline');
		const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
		let painted = false;
		// Any coloured (not grey) pixel: a span was drawn.
		for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i] - px[i + 2]) > 60 && px[i + 3] > 0) { painted = true; break; }
		return {instance: c.dataset.instance, counters: c.querySelector('dl.counters').textContent,
			held5: c.querySelectorAll('.q .qn')[5].textContent, tasks: c.querySelectorAll('table.tasks tbody tr').length,
			italic: c.querySelectorAll('i').length, painted};
	})()`)
	if got.Instance != "gpu0-3g.40gb-at0" || !strings.Contains(got.Counters, "123,456") || !strings.Contains(got.Counters, "filled into gaps321") ||
		got.Held5 != "17" || got.Tasks != 2 || got.Italic != 0 || !got.Painted {
		t.Errorf("scheduler card %+v", got)
	}
	page(t, b, "plan and reconfigurations",
		chromedp.Click(chromedp.CSS(`nav a[data-view="plan"]`)),
		waitFor(`document.querySelectorAll('#reconfigs-body tr').length === 1`),
		waitFor(`document.querySelector('#reconfigs-body').textContent.includes('create GPU instance 3g.40gb@0')`),
		waitFor(`document.querySelector('#reconfigs-body a[href="#/jobs/06h0j875sbwd57xs"]') !== null`),
		waitFor(`document.querySelector('#plan-body').textContent.includes('3g.40gb@0')`),
	)
	// A reconfiguration recorded later arrives live.
	n.AddReconfig(jobs.Reconfig{GPU: 0, Cause: "completion of job x", From: "3g.40gb@0", To: "7g.80gb@0"})
	n.SetPlan(node.PlanView{GPUs: []node.GPUView{}})
	page(t, b, "a new reconfiguration", waitFor(`document.querySelectorAll('#reconfigs-body tr').length === 2`))

	// Many jobs: the table shows 100 rows, and an update touches only the
	// rows of the jobs that changed (the others stay the same elements).
	var ids []string
	for i := range 600 {
		j, _, err := n.Submit(context.Background(), jobs.Spec{Name: fmt.Sprintf("many-%03d", i), Command: []string{"true"}, Kind: jobs.Offline}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	page(t, b, "600 jobs",
		chromedp.Click(chromedp.CSS(`nav a[data-view="jobs"]`)),
		waitFor(`document.querySelectorAll('#jobs-body tr').length === 100`),
		waitFor(`document.querySelector('#jobs-more').textContent === 'Show more (500 more)'`),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#jobs-body tr').forEach(tr => tr.__kept = true)`),
	)
	if err := n.SetState(ids[590], jobs.Running, "started"); err != nil {
		t.Fatal(err)
	}
	page(t, b, "one job changes", waitFor(`document.querySelector('#jobs-body tr[data-job="`+ids[590]+`"]').dataset.state === 'running'`))
	if kept := eval[int](t, b, `[...document.querySelectorAll('#jobs-body tr')].filter(tr => tr.__kept).length`); kept != 100 {
		t.Errorf("after one job changed, %d of 100 rows are the same elements: the table was drawn again", kept)
	}
	j, _, err := n.Submit(context.Background(), jobs.Spec{Name: "newest", Command: []string{"true"}, Kind: jobs.Online}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	page(t, b, "a job arrives", waitFor(`document.querySelector('#jobs-body tr').dataset.job === '`+j.ID+`'`))
	type rows struct {
		Rows int  `json:"rows"`
		Kept int  `json:"kept"`
		Last bool `json:"last"`
	}
	gotRows := eval[rows](t, b, `(() => { const trs = [...document.querySelectorAll('#jobs-body tr')];
		return {rows: trs.length, kept: trs.filter(tr => tr.__kept).length, last: trs.some(tr => tr.dataset.job === '`+ids[500]+`')}; })()`)
	if gotRows != (rows{Rows: 100, Kept: 99, Last: false}) {
		t.Errorf("after a job arrived: %+v, want 100 rows, 99 kept, the oldest shown gone", gotRows)
	}
	page(t, b, "show more and filter",
		chromedp.Click(chromedp.ID("jobs-more")),
		waitFor(`document.querySelectorAll('#jobs-body tr').length === 200`),
		chromedp.SetValue(chromedp.ID("f-state"), "running"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-state').dispatchEvent(new Event('change'))`),
		waitFor(`document.querySelectorAll('#jobs-body tr').length === 1`),
		chromedp.SetValue(chromedp.ID("f-state"), ""),
		chromedp.SendKeys(chromedp.ID("f-name"), "many-00"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-state').dispatchEvent(new Event('change'))`),
		waitFor(`document.querySelectorAll('#jobs-body tr').length === 10`),
	)
	// The online job's latency against its target, on its page: the
	// standing in words, the percentile line, the bound and late seconds.
	if err := n.SetState(j.ID, jobs.Running, "started"); err != nil {
		t.Fatal(err)
	}
	for i, pct := range []float64{12, 31, 18} {
		late := 0
		if pct > 25 {
			late = 3
		}
		n.SetSLO(node.SLOView{Jobs: []node.JobSLO{{ID: j.ID, Name: "newest", Instance: "gpu0", GPUInstance: -1, Target: "p99=25ms", BoundMs: 25,
			Source: "reported", Requests: uint64(100 * (i + 1)), Late: 3, Attainment: 1 - 3/float64(100*(i+1)), RecentN: 100, RecentLate: late,
			P50Ms: 7, PctMs: pct, State: "met", Detail: "p99 18ms against 25ms", Rung: "tpcs=0.97", TPCsKept: 64, Live: true, At: now.Add(time.Duration(i) * time.Second)}}})
	}
	page(t, b, "an online job's latency",
		chromedp.Navigate(srv.URL+"/#/jobs/"+j.ID),
		waitFor(`!document.querySelector('#job-slo').hidden`),
		waitFor(`document.querySelector('#job-slo-now').textContent.includes('99.00 % of 300 requests within')`),
		waitFor(`document.querySelector('#job-slo-now').textContent.includes('of gpu0: tpcs=0.97 (a mask keeping 64 TPCs)')`),
		waitFor(`document.querySelector('#job-slo-chart polyline.pct') !== null && document.querySelector('#job-slo-chart polyline.bound') !== null`),
		waitFor(`document.querySelectorAll('#job-slo-chart circle.late').length === 1`),
	)
	if pts := eval[int](t, b, `document.querySelector('#job-slo-chart polyline.pct').points.numberOfItems`); pts != 3 {
		t.Errorf("the latency line has %d points, want one a second, 3", pts)
	}
	// An offline job's page has no latency box.
	page(t, b, "an offline job's page",
		chromedp.Navigate(srv.URL+"/#/jobs/"+ids[0]),
		waitFor(`document.querySelector('#job-details').textContent.includes('many-000')`),
		chromedp.Sleep(300*time.Millisecond),
	)
	if !eval[bool](t, b, `document.querySelector('#job-slo').hidden`) {
		t.Error("an offline job's page shows a latency box")
	}
	checkPage(t, b, srv.URL, "")
}

func containsAny(list []string, want ...string) bool {
	for _, s := range list {
		for _, w := range want {
			if s == w {
				return true
			}
		}
	}
	return false
}

func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(errors.New("jsString: " + err.Error()))
	}
	return string(b)
}

// TestDashboardWaitingReasons: the overview's Waiting list and a waiting
// job's page say what holds the job, since when and its place in the
// queue (issue 37, item 3: they showed no reason).
func TestDashboardWaitingReasons(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	j, _, err := n.Submit(context.Background(), jobs.Spec{Name: "big-train", Command: []string{"true"}, Kind: jobs.Offline, MemoryMiB: 100 << 10}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := jobs.Wait{Class: node.WaitMemory, Reason: "needs 100 GiB; the most free is 20 GiB on GPU 2 (whole GPU)", Since: time.Now().Add(-5 * time.Minute), Position: 1}
	if err := n.SetWait(j.ID, w); err != nil {
		t.Fatal(err)
	}
	n.SetPlan(node.PlanView{GPUs: []node.GPUView{}, Waiting: []string{j.ID}, WaitingTotal: 1,
		WaitingJobs: []node.WaitingView{{ID: j.ID, Name: j.Spec.Name, Wait: w}}, WaitingByClass: map[string]int{node.WaitMemory: 1}})
	srv := serveFakeNode(t, n)
	page(t, b, "the overview's Waiting list",
		chromedp.Navigate(srv.URL+"/#/"),
		waitFor(`document.querySelector('#waiting').textContent.includes(`+jsString(w.Reason)+`)`),
		waitFor(`document.querySelector('#waiting').textContent.includes('waiting 5 m')`),
	)
	page(t, b, "the job's page",
		chromedp.Navigate(srv.URL+"/#/jobs/"+j.ID),
		waitFor(`document.querySelector('#job-details').textContent.includes(`+jsString(w.Reason)+`)`),
		waitFor(`document.querySelector('#job-details').textContent.includes('Waiting since')`),
		waitFor(`document.querySelector('#job-details').textContent.includes('1 of the waiting jobs')`),
	)
}

// serveFakeNode serves the API and dashboard over a fake node until the
// test ends.
func serveFakeNode(t *testing.T, n *webtest.FakeNode) *httptest.Server {
	t.Helper()
	api := web.New(web.Options{Node: n, Log: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		api.Close()
		srv.Close()
	})
	return srv
}

// TestDashboardMemoryBars: each instance on the overview shows its
// memory as a bar with numbers: used (what NVML measured on its device
// at the last sample, else what its running jobs asked for) and
// requested (its placed jobs) against its own (issue 37, item 8).
func TestDashboardMemoryBars(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	gi1, gi2 := 1, 2
	n.SetPlan(node.PlanView{GPUs: []node.GPUView{{Index: 0, Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4", SMs: 132, MemoryMiB: 81559,
		Instances: []node.InstanceView{
			{Name: "gpu0/gi1", GI: &gi1, Index: 0, Key: "gpu0-4g.40gb-at0", Profile: "4g.40gb", Start: 0, Size: 4, ComputeSlices: 4, SMs: 64, MemoryMiB: 40448,
				Device: "MIG-aaaa", RequestedMiB: 12288, RunningMiB: 8192, Jobs: []node.PlacedView{
					{ID: "06h0j875sbwd57xs", Name: "train", Kind: jobs.Offline, State: jobs.Running, MemoryMiB: 8192},
					{ID: "06h0j875sbwd57xt", Name: "serve", Kind: jobs.Online, State: jobs.Placed, MemoryMiB: 4096}}},
			{Name: "gpu0/gi2", GI: &gi2, Index: 1, Key: "gpu0-3g.40gb-at4", Profile: "3g.40gb", Start: 4, Size: 4, ComputeSlices: 3, SMs: 60, MemoryMiB: 40448,
				Device: "MIG-bbbb", RequestedMiB: 30720, RunningMiB: 30720, Jobs: []node.PlacedView{
					{ID: "06h0j875sbwd57xv", Name: "embed", Kind: jobs.Offline, State: jobs.Running, MemoryMiB: 30720}}},
		}}}})
	// The fake node samples one device of the two: the other shows its
	// running jobs' memory.
	n.SetUsage(node.UsageView{At: time.Now(), Every: time.Second, Devices: []node.DeviceMemory{
		{Device: "MIG-aaaa", GPU: 0, GPUInstance: 1, Processes: 2, UsedMemoryMiB: 6144}}})
	srv := serveFakeNode(t, n)
	page(t, b, "the overview's memory bars",
		chromedp.Navigate(srv.URL+"/#/"),
		waitFor(`document.querySelectorAll('#gpus .membar[data-measured="true"]').length === 1`),
	)
	type bar struct {
		Key, Text, Used, Requested, Title string
		Measured                          bool
	}
	got := eval[[]bar](t, b, `[...document.querySelectorAll('#gpus .membar')].map(el => ({Key: el.dataset.key,
		Text: el.querySelector('.memtext').textContent, Used: el.querySelector('.used').style.width,
		Requested: el.querySelector('.req').style.width, Title: el.title, Measured: el.dataset.measured === 'true'}))`)
	tests := []struct {
		want  bar
		title []string
	}{
		{bar{Key: "gpu0-4g.40gb-at0", Text: "6 GiB used · 12 GiB requested of 39.5 GiB", Used: "15.1899%", Requested: "30.3797%", Measured: true},
			[]string{"39.5 GiB in all", "held by 2 processes", "as NVML measured", "12 GiB, what its 2 placed jobs asked for"}},
		{bar{Key: "gpu0-3g.40gb-at4", Text: "30 GiB running · 30 GiB requested of 39.5 GiB", Used: "75.9494%", Requested: "75.9494%"},
			[]string{"what its running jobs asked for", "1 placed job asked for"}},
	}
	if len(got) != len(tests) {
		t.Fatalf("%d memory bars, want %d: %+v", len(got), len(tests), got)
	}
	for i, tt := range tests {
		g := got[i]
		title := g.Title
		g.Title = ""
		if g != tt.want {
			t.Errorf("bar %d\n got %+v\nwant %+v", i, g, tt.want)
		}
		for _, w := range tt.title {
			if !strings.Contains(title, w) {
				t.Errorf("bar %d's tooltip %q lacks %q", i, title, w)
			}
		}
	}
	checkPage(t, b, srv.URL, "")
}

// TestDashboardGPUHealth: each GPU card on the overview shows the GPU's
// health as the node read it, each number with its unit and a tooltip:
// utilisation, power of its limit, temperature, each with a chart of its
// samples that grows as new ones come (the page asks only for those),
// and the ECC and XID error counts; a reading NVML did not give shows as
// unknown, saying why (issue 37, item 8).
func TestDashboardGPUHealth(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	n.SetPlan(node.PlanView{GPUs: []node.GPUView{
		{Index: 0, Model: "H100-80GB", MIG: true, Layout: "7g.80gb@0", SMs: 132, MemoryMiB: 81559, Instances: []node.InstanceView{
			{Name: "gpu0/gi0", Index: 0, Key: "gpu0-7g.80gb-at0", Profile: "7g.80gb", Start: 0, Size: 8, ComputeSlices: 7, SMs: 132, MemoryMiB: 81559}}},
		{Index: 1, Model: "H200-141GB", SMs: 132, MemoryMiB: 143771, Instances: []node.InstanceView{
			{Name: "gpu1", Index: 0, Key: "gpu1", Size: 8, ComputeSlices: 7, SMs: 132, MemoryMiB: 143771}}},
	}})
	at := time.Now().Truncate(time.Second)
	sample := func(i int) (node.HealthSample, node.HealthSample) {
		t := at.Add(time.Duration(i) * time.Second)
		return node.HealthSample{At: t, PowerW: ptr(90.5 + float64(i)), TempC: ptr(33)},
			node.HealthSample{At: t, UtilPct: ptr(40 + i), MemUtilPct: ptr(10), PowerW: ptr(300.4), TempC: ptr(55 + i)}
	}
	view := func(last int) node.HealthView {
		var h0, h1 []node.HealthSample
		for i := range last + 1 {
			a, c := sample(i)
			h0, h1 = append(h0, a), append(h1, c)
		}
		now := at.Add(time.Duration(last) * time.Second)
		return node.HealthView{At: now, Every: time.Second, Window: 10 * time.Minute, GPUs: []node.GPUHealthView{
			{GPUHealth: partitioner.GPUHealth{GPU: 0, UUID: "GPU-aaa", PowerW: h0[last].PowerW, PowerLimitW: ptr(700.0), TempC: ptr(33),
				ECCUncorrected: ptr[uint64](0), XIDs: ptr[uint64](0),
				Unknown: map[string]string{"utilPct": "NVML_ERROR_NOT_SUPPORTED", "memUtilPct": "NVML_ERROR_NOT_SUPPORTED"}}, History: h0},
			{GPUHealth: partitioner.GPUHealth{GPU: 1, UUID: "GPU-bbb", UtilPct: h1[last].UtilPct, MemUtilPct: ptr(10), PowerW: ptr(300.4), PowerLimitW: ptr(700.0),
				TempC: h1[last].TempC, ECCUncorrected: ptr[uint64](2), XIDs: ptr[uint64](3), LastXID: 79}, History: h1},
		}}
	}
	n.SetHealth(view(2))
	srv := serveFakeNode(t, n)
	page(t, b, "the overview's health",
		chromedp.Navigate(srv.URL+"/#/"),
		waitFor(`document.querySelectorAll('#gpus .health .hcell').length === 6`),
	)
	type reading struct {
		GPU, Metric, Text, Title string
		Points                   int
	}
	read := func() []reading {
		return eval[[]reading](t, b, `[...document.querySelectorAll('#gpus .health')].flatMap(el => [...el.querySelectorAll('[data-metric]:not(svg)')].map(m => ({
			GPU: el.dataset.gpu, Metric: m.dataset.metric, Text: m.textContent, Title: m.title,
			Points: Number(el.querySelector('svg[data-metric="' + m.dataset.metric + '"]')?.dataset.points ?? -1)})))`)
	}
	tests := []struct {
		want  reading
		title string
	}{
		{reading{GPU: "0", Metric: "utilPct", Text: "—", Points: 0}, "NVML_ERROR_NOT_SUPPORTED: NVML does not give it for this GPU in its mode"},
		{reading{GPU: "0", Metric: "powerW", Text: "93 W", Points: 3}, "the board’s power draw, in watts"},
		{reading{GPU: "0", Metric: "powerLimitW", Text: " of 700 W", Points: -1}, "the power limit the driver enforces: 700 W"},
		{reading{GPU: "0", Metric: "tempC", Text: "33 °C", Points: 3}, "temperature, in degrees Celsius"},
		{reading{GPU: "0", Metric: "eccUncorrected", Text: "ECC errors 0", Points: -1}, "uncorrectable (double-bit) ECC errors"},
		{reading{GPU: "0", Metric: "xids", Text: "XID errors 0", Points: -1}, "since mmkd started"},
		{reading{GPU: "1", Metric: "utilPct", Text: "42 %", Points: 3}, "a kernel ran on the GPU"},
		{reading{GPU: "1", Metric: "powerW", Text: "300 W", Points: 3}, "power: 300 W"},
		{reading{GPU: "1", Metric: "powerLimitW", Text: " of 700 W", Points: -1}, "700 W"},
		{reading{GPU: "1", Metric: "tempC", Text: "57 °C", Points: 3}, "temperature: 57 °C"},
		{reading{GPU: "1", Metric: "eccUncorrected", Text: "ECC errors 2", Points: -1}, "2 uncorrectable"},
		{reading{GPU: "1", Metric: "xids", Text: "XID errors 3 (last: XID 79)", Points: -1}, "the latest was XID 79"},
	}
	got := read()
	if len(got) != len(tests) {
		t.Fatalf("%d readings, want %d: %+v", len(got), len(tests), got)
	}
	for i, tt := range tests {
		g := got[i]
		title := g.Title
		g.Title = ""
		if g != tt.want || !strings.Contains(title, tt.title) {
			t.Errorf("reading %d\n got %+v (title %q)\nwant %+v (title with %q)", i, g, title, tt.want, tt.title)
		}
	}
	if bad := eval[int](t, b, `document.querySelectorAll('#gpus .health .hv.bad').length`); bad != 2 {
		t.Errorf("%d counts shown as bad, want GPU 1's ECC and XID errors", bad)
	}
	// A new sample: the charts grow by it.
	n.SetHealth(view(3))
	page(t, b, "a new sample",
		waitFor(`document.querySelector('#gpus .health[data-gpu="1"] svg[data-metric="utilPct"]').dataset.points === '4'`),
		waitFor(`document.querySelector('#gpus .health[data-gpu="1"] [data-metric="utilPct"]:not(svg)').textContent === '43 %'`),
	)
	// A chart spans the samples held (here 3 s, not the 10 minutes of
	// the window): from its left edge to its right.
	xs := eval[[]float64](t, b, `[...document.querySelector('#gpus .health[data-gpu="1"] svg[data-metric="utilPct"] polyline').points].map(p => p.x)`)
	if len(xs) != 4 || xs[0] != 0 || xs[3] != 200 {
		t.Errorf("the chart's points at x %v, want 4 from 0 to 200", xs)
	}
	if title := eval[string](t, b, `document.querySelector('#gpus .health[data-gpu="1"] svg[data-metric="utilPct"] title').textContent`); !strings.HasPrefix(title, "utilisation over the last 3 s (4 samples, 40 % to 43 %") {
		t.Errorf("the chart's title %q", title)
	}
	checkPage(t, b, srv.URL, "")
}

func ptr[T any](v T) *T { return &v }

// fakeHealth is what the dashboard shows of fake GPUs of seed and specs,
// idle, read at time at: by GPU and reading, its text.
func fakeHealth(t *testing.T, seed uint64, specs []fakegpu.GPUSpec, at time.Time) map[string]string {
	t.Helper()
	b, f, err := nvmlbackend.OpenFake(seed, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f.SetClock(func() time.Time { return at })
	hs, err := b.Health()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, h := range hs {
		k := strconv.Itoa(h.GPU) + " "
		out[k+"utilPct"] = "—"
		if h.UtilPct != nil {
			out[k+"utilPct"] = strconv.Itoa(*h.UtilPct) + " %"
		}
		out[k+"powerW"] = strconv.FormatFloat(*h.PowerW, 'f', 0, 64) + " W"
		out[k+"powerLimitW"] = " of " + strconv.FormatFloat(*h.PowerLimitW, 'f', 0, 64) + " W"
		out[k+"tempC"] = strconv.Itoa(*h.TempC) + " °C"
		out[k+"eccUncorrected"] = "ECC errors " + strconv.FormatUint(*h.ECCUncorrected, 10)
		out[k+"xids"] = "XID errors " + strconv.FormatUint(*h.XIDs, 10)
	}
	return out
}

// untitled lists, on the page shown, each number (a text with a digit,
// in the header or the view shown) that has no tooltip (no title on it
// or an element around it, nor a <title> in its SVG), and each decimal
// that says no unit (STP, ×, %, GiB, MiB, W, °C, ms, s). Names, ids,
// commands, logs and reasons are text, not numbers: links, code, the
// name cells, the reasons, form fields and elements marked .ident are
// left out.
func untitled(t *testing.T, b *uitest.Browser) []string {
	t.Helper()
	return eval[[]string](t, b, `(() => {
		const skip = 'a, pre, code, textarea, input, select, option, button, dialog, title, .ident, .prose, td.name, .wait-reason, ol.argv, ol.steps, .error, .result, .state, .kind';
		const out = [];
		const roots = [document.querySelector('header.top'), ...document.querySelectorAll('main > section.view:not([hidden])')];
		for (const root of roots) {
			const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
			for (let n = w.nextNode(); n; n = w.nextNode()) {
				const text = n.textContent;
				const el = n.parentElement;
				if (!/\d/.test(text) || el.closest(skip) || !el.getClientRects().length) continue;
				const where = text.trim() + ' in ' + el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.getAttribute('class') ? '.' + el.getAttribute('class').replace(/ /g, '.') : '') +
					' (' + (el.closest('[id]') || {}).id + ')';
				const tip = el.closest('[title]');
				const svg = el.closest('svg');
				if (!(tip && tip.title.trim() && root.contains(tip)) && !(svg && svg.querySelector(':scope > title'))) {
					out.push('no tooltip: ' + where);
					continue;
				}
				const ctx = (tip && root.contains(tip) ? tip : el).textContent;
				if (/\d\.\d/.test(text) && !/(STP|×|%|GiB|MiB|KiB|\dW\b| W\b|°C|ms\b| s\b)/.test(ctx)) out.push('no unit: ' + where + ': ' + ctx);
			}
		}
		return out;
	})()`)
}

// TestDashboardNumbersHaveUnitsAndTooltips: every number the dashboard
// shows, on every page, has a tooltip saying what it is, and each
// quantity its unit: the predicted throughput and a reconfiguration's
// gain in STP, a job's speed as a multiple of its speed alone, MPS
// shares in %, memory in GiB or MiB, power in W, temperature in °C,
// times with their dates (issue 37, item 8: "throughput 4.52" said no
// unit, table cells no tooltip).
func TestDashboardNumbersHaveUnitsAndTooltips(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	now := time.Now()
	submit := func(name string, kind jobs.Kind, mem int64) jobs.Job {
		j, _, err := n.Submit(context.Background(), jobs.Spec{Name: name, Command: []string{"python3", "train.py", "--epochs=90"}, Kind: kind, MemoryMiB: mem}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	train := submit("train-90", jobs.Offline, 8192)
	serve := submit("serve-2", jobs.Online, 4096)
	waits := submit("big-3", jobs.Offline, 100<<10)
	done := submit("done-4", jobs.Offline, 2048)
	gi1 := 1
	for _, j := range []struct {
		id  string
		pct int
		pid int
	}{{train.ID, 60, 4242}, {serve.ID, 40, 4343}} {
		if err := n.SetState(j.id, jobs.Running, "started"); err != nil {
			t.Fatal(err)
		}
		if err := n.SetPlacement(j.id, jobs.Placement{GPU: 0, GPUUUID: "GPU-aaa", Instance: 0, Profile: "4g.40gb", InstanceKey: "gpu0-4g.40gb-at0",
			InstanceName: "gpu0/gi1", Device: "MIG-aaaa", MPSPercent: j.pct, Share: j.pct, Speed: 0.87, MemLimitMiB: 9011}, j.pid); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.SetState(done.ID, jobs.Succeeded, "exit status 0"); err != nil {
		t.Fatal(err)
	}
	w := jobs.Wait{Class: node.WaitMemory, Reason: "needs 100 GiB; the most free is 20 GiB on GPU 1", Since: now.Add(-90 * time.Second), Position: 1}
	if err := n.SetWait(waits.ID, w); err != nil {
		t.Fatal(err)
	}
	n.SetPlan(node.PlanView{Decisions: 12, Total: 4.52, Waiting: []string{waits.ID}, WaitingTotal: 1,
		WaitingJobs: []node.WaitingView{{ID: waits.ID, Name: waits.Spec.Name, Wait: w}},
		GPUs: []node.GPUView{
			{Index: 0, UUID: "GPU-aaa", Name: "NVIDIA H100 80GB HBM3", Model: "H100-80GB", MIG: true, Layout: "4g.40gb@0+3g.40gb@4", SMs: 132, MemoryMiB: 81559,
				Instances: []node.InstanceView{
					{Name: "gpu0/gi1", GI: &gi1, Index: 0, Key: "gpu0-4g.40gb-at0", Profile: "4g.40gb", Start: 0, Size: 4, ComputeSlices: 4, SMs: 64, MemoryMiB: 40448,
						Device: "MIG-aaaa", MPS: true, RequestedMiB: 12288, RunningMiB: 12288, Jobs: []node.PlacedView{
							{ID: train.ID, Name: train.Spec.Name, Kind: jobs.Offline, State: jobs.Running, Percent: 60, Speed: 0.87, MemoryMiB: 8192},
							{ID: serve.ID, Name: serve.Spec.Name, Kind: jobs.Online, State: jobs.Running, Percent: 40, Speed: 0.95, MemoryMiB: 4096}}},
					{Name: "gpu0/gi2", Index: 1, Key: "gpu0-3g.40gb-at4", Profile: "3g.40gb", Start: 4, Size: 4, ComputeSlices: 3, SMs: 60, MemoryMiB: 40448,
						Device: "MIG-bbbb", Jobs: []node.PlacedView{}}}},
			{Index: 1, UUID: "GPU-bbb", Name: "NVIDIA H200", Model: "H200-141GB", SMs: 132, MemoryMiB: 143771, Instances: []node.InstanceView{
				{Name: "gpu1", Index: 0, Key: "gpu1", Size: 8, ComputeSlices: 7, SMs: 132, MemoryMiB: 143771, Device: "GPU-bbb", Jobs: []node.PlacedView{}}}},
		}})
	n.AddReconfig(jobs.Reconfig{GPU: 0, Cause: "arrival of job " + train.ID, From: "7g.80gb@0", To: "4g.40gb@0+3g.40gb@4",
		Steps: []string{"destroy GPU instance 7g.80gb@0", "create GPU instance 4g.40gb@0"}, Started: []string{train.ID}, Gain: 0.35, Duration: 1234 * time.Millisecond})
	n.SetSchedulers([]node.SchedView{{Instance: "gpu0-4g.40gb-at0", Name: "gpu0/gi1", Policy: "fikit+mmk",
		Counters: server.Counters{Tasks: 2, Kernels: 123456, AtOnce: 120000, Held: 3456, Filled: 321, FailOpens: 2, Went: 1},
		Queues:   [10]int{0, 0, 0, 0, 0, 17},
		Tasks: []server.TaskView{{Name: "serve-2", PID: 4343, Priority: 0, Online: true, Free: true, Profiled: true},
			{Name: "train-90", PID: 4242, Priority: 5, Held: 17}},
		Timeline: []server.Span{{Task: "serve-2", Priority: 0, Start: now.Add(-2 * time.Second), End: now.Add(-1900 * time.Millisecond), Kernels: 10}}}})
	n.SetUsage(node.UsageView{At: now, Every: time.Second, Jobs: []node.JobUsage{
		{ID: train.ID, Name: train.Spec.Name, GPU: 0, GPUUUID: "GPU-aaa", Device: "MIG-aaaa", GPUInstance: 1, Profile: "4g.40gb",
			Processes: 2, UsedMemoryMiB: 6000, PeakMemoryMiB: 7000, LimitMiB: 9011, At: now}},
		Devices: []node.DeviceMemory{{Device: "MIG-aaaa", GPU: 0, GPUInstance: 1, Processes: 2, UsedMemoryMiB: 6000}}})
	n.SetHealth(node.HealthView{At: now, Every: time.Second, Window: 10 * time.Minute, GPUs: []node.GPUHealthView{
		{GPUHealth: partitioner.GPUHealth{GPU: 0, UUID: "GPU-aaa", PowerW: ptr(92.5), PowerLimitW: ptr(700.0), TempC: ptr(33), ECCUncorrected: ptr[uint64](0), XIDs: ptr[uint64](0),
			Unknown: map[string]string{"utilPct": "NVML_ERROR_NOT_SUPPORTED", "memUtilPct": "NVML_ERROR_NOT_SUPPORTED"}},
			History: []node.HealthSample{{At: now, PowerW: ptr(92.5), TempC: ptr(33)}}},
		{GPUHealth: partitioner.GPUHealth{GPU: 1, UUID: "GPU-bbb", UtilPct: ptr(42), MemUtilPct: ptr(10), PowerW: ptr(300.4), PowerLimitW: ptr(700.0), TempC: ptr(57),
			ECCUncorrected: ptr[uint64](0), XIDs: ptr[uint64](0)},
			History: []node.HealthSample{{At: now, UtilPct: ptr(42), PowerW: ptr(300.4), TempC: ptr(57)}}},
	}})
	n.SetSLO(node.SLOView{Jobs: []node.JobSLO{{ID: serve.ID, Name: serve.Spec.Name, Instance: "gpu0/gi1", GPUInstance: 1, Target: "p99=25ms", BoundMs: 25,
		Source: "reported", Requests: 300, Late: 3, Attainment: 0.99, RecentN: 100, RecentLate: 1, P50Ms: 7.25, PctMs: 18.5, State: "met",
		Detail: "p99 18.5ms against 25ms", Rung: "hold", Live: true, At: now}}})
	srv := serveFakeNode(t, n)

	pages := []struct {
		hash, ready string
	}{
		{"#/", `document.querySelectorAll('#gpus .health .hcell').length === 6 && document.querySelector('#waiting').textContent.includes('big-3') && document.querySelector('#sched-brief table') !== null`},
		{"#/jobs", `document.querySelectorAll('#jobs-body tr').length === 4`},
		{"#/jobs/" + train.ID, `document.querySelector('#job-details').textContent.includes('9011') || document.querySelector('#job-details').textContent.includes('8.8 GiB')`},
		{"#/jobs/" + train.ID, `document.querySelector('#job-usage-chart polygon.mem') !== null && document.querySelectorAll('#job-events tr').length >= 2`},
		{"#/jobs/" + serve.ID, `document.querySelector('#job-slo-chart polyline.pct') !== null`},
		{"#/jobs/" + waits.ID, `document.querySelector('#job-details').textContent.includes('Queue position')`},
		{"#/jobs/" + done.ID, `document.querySelector('#job-details').textContent.includes('succeeded')`},
		{"#/sched", `document.querySelectorAll('article.sched').length === 1 && document.querySelectorAll('table.tasks tbody tr').length === 2`},
		{"#/plan", `document.querySelectorAll('#plan-body tr').length === 3 && document.querySelectorAll('#reconfigs-body tr').length === 1`},
		{"#/slo", `document.querySelectorAll('#slo-jobs-body tr').length === 1`},
	}
	page(t, b, "load", chromedp.Navigate(srv.URL+"/"), waitFor(`document.querySelector('#conn').dataset.state === 'live'`))
	for _, p := range pages {
		page(t, b, p.hash, chromedp.Evaluate[chromedp.Void](`location.hash = `+jsString(p.hash)), waitFor(p.ready))
		for _, u := range untitled(t, b) {
			t.Errorf("%s: %s", p.hash, u)
		}
	}
	// The units of the quantities named in the issue.
	page(t, b, "overview", chromedp.Evaluate[chromedp.Void](`location.hash = '#/'`), waitFor(`document.querySelector('#summary').textContent.includes('throughput')`))
	checks := []struct {
		hash, expr, want string
	}{
		{"#/", `[...document.querySelectorAll('#summary .fact')].find(f => f.textContent.includes('throughput')).textContent`, "predicted throughput 4.52 STP"},
		{"#/jobs", `document.querySelector('#jobs-body tr[data-job="` + train.ID + `"] td.mps').textContent`, "60 %"},
		{"#/jobs/" + train.ID, `[...document.querySelectorAll('#job-details dt')].find(d => d.textContent === 'Predicted speed').nextElementSibling.textContent`, "0.87 × alone"},
		{"#/plan", `document.querySelector('#reconfigs-body td.gain').textContent`, "+0.35 STP"},
		{"#/plan", `document.querySelector('#plan-note').textContent`, "12 decisions · predicted throughput 4.52 STP · 1 waiting"},
	}
	for _, c := range checks {
		page(t, b, c.hash, chromedp.Evaluate[chromedp.Void](`location.hash = `+jsString(c.hash)), waitFor(`(() => { try { return (`+c.expr+`) !== ''; } catch (e) { return false; } })()`))
		if got := eval[string](t, b, c.expr); got != c.want {
			t.Errorf("%s: %q, want %q", c.hash, got, c.want)
		}
	}
	checkPage(t, b, srv.URL, "")
}

// TestDashboardOwnersAndBulkCancel: the jobs table names each job's
// owner; jobs selected by their boxes (the header's box selects every
// shown job that has not ended; an ended job's box is disabled) are
// cancelled with one click and a confirmation, each through the cancel
// API, and the one mmkd refuses (a Kubernetes claim job) is reported by
// its id with the refusal (issue 37, item 8).
func TestDashboardOwnersAndBulkCancel(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	alice := &jobs.Owner{UID: 1000, GID: 1000, Name: "alice"}
	bob := &jobs.Owner{UID: 1001, GID: 1001}
	submit := func(spec jobs.Spec, owner *jobs.Owner) jobs.Job {
		j, _, err := n.Submit(context.Background(), spec, "", owner)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	cmd := []string{"sleep", "600"}
	done := submit(jobs.Spec{Name: "done", Command: cmd, Kind: jobs.Offline}, alice)
	run := submit(jobs.Spec{Name: "run", Command: cmd, Kind: jobs.Offline}, alice)
	wait := submit(jobs.Spec{Name: "wait", Command: cmd, Kind: jobs.Online}, bob)
	claim := submit(jobs.Spec{Name: "pod-claim", Kind: jobs.Offline,
		Claim: &jobs.Claim{Namespace: "ml", Name: "gpu-claim", UID: "c-1", Instance: "gpu1", Pods: []string{"ml/trainer"}}}, nil)
	for id, st := range map[string]jobs.State{done.ID: jobs.Succeeded, run.ID: jobs.Running, claim.ID: jobs.Running} {
		if err := n.SetState(id, st, "test"); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveFakeNode(t, n)
	page(t, b, "the jobs",
		chromedp.Navigate(srv.URL+"/#/jobs"),
		waitFor(`document.querySelectorAll('#jobs-body tr').length === 4`),
	)
	type row struct {
		Name, Owner, OwnerTitle string
		Box                     bool
	}
	rows := eval[[]row](t, b, `[...document.querySelectorAll('#jobs-body tr')].map(tr => ({Name: tr.querySelector('td.name').textContent,
		Owner: tr.querySelector('td.owner').textContent, OwnerTitle: tr.querySelector('td.owner').title, Box: !tr.querySelector('td.sel input').disabled}))`)
	self := jobs.Self()
	selfName := self.Name
	if selfName == "" {
		selfName = "uid " + strconv.Itoa(self.UID)
	}
	want := []row{
		{"pod-claim", selfName, "runs as " + self.String() + ", gid " + strconv.Itoa(self.GID), true},
		{"wait", "uid 1001", "runs as uid 1001, gid 1001", true},
		{"run", "alice", "runs as alice (uid 1000), gid 1000", true},
		{"done", "alice", "runs as alice (uid 1000), gid 1000", false},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rows\n got %+v\nwant %+v", rows, want)
	}
	page(t, b, "select all and cancel",
		chromedp.Click(chromedp.ID("jobs-all")),
		waitFor(`!document.querySelector('#bulk').hidden && document.querySelector('#bulk-cancel').textContent === 'Cancel 3 selected jobs'`),
		chromedp.Click(chromedp.ID("bulk-cancel")),
		chromedp.WaitVisible(chromedp.ID("bulk-yes")),
		chromedp.Click(chromedp.ID("bulk-yes")),
		waitFor(`document.querySelector('#bulk-result').textContent.startsWith('Cancelled 2 of 3')`),
		waitFor(`document.querySelector('#jobs-body tr[data-job="`+run.ID+`"]').dataset.state === 'cancelled'`),
		waitFor(`document.querySelector('#jobs-body tr[data-job="`+wait.ID+`"]').dataset.state === 'cancelled'`),
	)
	result := eval[string](t, b, `document.querySelector('#bulk-result').textContent`)
	for _, w := range []string{"Refused: " + claim.ID + " (pod-claim): ", "a claim job ends when Kubernetes unprepares its claim"} {
		if !strings.Contains(result, w) {
			t.Errorf("the result %q does not say %q", result, w)
		}
	}
	for id, st := range map[string]jobs.State{run.ID: jobs.Cancelled, wait.ID: jobs.Cancelled, claim.ID: jobs.Running, done.ID: jobs.Succeeded} {
		if j, err := n.Job(id); err != nil || j.State != st {
			t.Errorf("job %s: %s %v, want %s", id, j.State, err, st)
		}
	}
	if ev, _ := n.Events(run.ID); ev[len(ev)-1].Reason != "cancelled from the dashboard" {
		t.Errorf("the cancel's reason: %q", ev[len(ev)-1].Reason)
	}
	// What stays selected: the refused job, whose box is still on.
	if sel := eval[int](t, b, `document.querySelectorAll('#jobs-body td.sel input:checked').length`); sel != 1 {
		t.Errorf("%d boxes still checked, want the refused job's", sel)
	}
	checkPage(t, b, srv.URL, "")
}

// TestDashboardSignInNamesTheTokenFile: signing in to an mmkd that made
// its own token, the dialog names the file on the node that holds it
// (and how to read it), not the API's error; a wrong token is refused
// in words, the file named again; the right one signs in (issue 37,
// item 8: the dialog showed "this mmkd requires a token: send
// Authorization: Bearer <token>").
func TestDashboardSignInNamesTheTokenFile(t *testing.T) {
	b := startBrowser(t)
	dir := t.TempDir()
	d := startDaemon(t, dir, freeAddr(t))
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
	})
	file := filepath.Join(dir, "token")
	tok, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + d.addr
	page(t, b, "the dialog",
		chromedp.Navigate(origin+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		waitFor(`document.querySelector('#token-why').textContent.includes(`+jsString(file)+`)`),
	)
	why := eval[string](t, b, `document.querySelector('#token-why').textContent`)
	for _, w := range []string{"in the file " + file + " on the node", "cat " + file} {
		if !strings.Contains(why, w) {
			t.Errorf("the dialog says %q, want %q in it", why, w)
		}
	}
	if strings.Contains(why, "Authorization") || strings.Contains(why, "Bearer") {
		t.Errorf("the dialog shows the API's error: %q", why)
	}
	page(t, b, "a wrong token",
		chromedp.SendKeys(chromedp.ID("token-input"), "not-the-token"),
		chromedp.Click(chromedp.ID("token-go")),
		waitFor(`document.querySelector('#token-why').textContent.startsWith('That token was not accepted.')`),
		waitFor(`document.querySelector('#token-dialog').open`),
	)
	if why := eval[string](t, b, `document.querySelector('#token-why').textContent`); !strings.Contains(why, file) || strings.Contains(why, "not valid") {
		t.Errorf("after a wrong token the dialog says %q: want the file named again, in words", why)
	}
	page(t, b, "the right token",
		chromedp.SendKeys(chromedp.ID("token-input"), strings.TrimSpace(string(tok))),
		chromedp.Click(chromedp.ID("token-go")),
		waitFor(`document.querySelector('#conn').dataset.state === 'live'`),
	)
	checkPage(t, b, origin, strings.TrimSpace(string(tok)))
}

// TestDashboardStopsAskingForNoHealth: a node that samples no health
// (no reader, or sampling off) answers with no interval, and the
// overview does not ask it again every 2 s (it did: only a 503 stopped
// it). Over 5 s the page asks once.
func TestDashboardStopsAskingForNoHealth(t *testing.T) {
	b := startBrowser(t)
	n := webtest.NewFakeNode(t.TempDir())
	n.SetPlan(node.PlanView{GPUs: []node.GPUView{{Index: 0, Model: "H200-141GB", SMs: 132, MemoryMiB: 143771, Instances: []node.InstanceView{
		{Name: "gpu0", Index: 0, Key: "gpu0", Size: 8, ComputeSlices: 7, SMs: 132, MemoryMiB: 143771}}}}})
	n.SetHealth(node.HealthView{Window: 10 * time.Minute, GPUs: []node.GPUHealthView{}})
	api := web.New(web.Options{Node: n, Log: slog.New(slog.DiscardHandler)})
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/gpus/health" {
			asked.Add(1)
		}
		api.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		api.Close()
		srv.Close()
	})
	page(t, b, "the overview",
		chromedp.Navigate(srv.URL+"/#/"),
		waitFor(`document.querySelectorAll('#gpus .gpu').length === 1`),
		chromedp.Sleep(5*time.Second),
	)
	if got := asked.Load(); got > 1 {
		t.Errorf("the overview asked for health %d times in 5 s of a node that samples none, want at most once", got)
	}
}
