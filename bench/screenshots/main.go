// Command screenshots takes the dashboard's screenshots for the docs: it
// starts mmkd on the fake GPUs of the embedded defaults (a fresh data
// directory, a loopback port), submits a few jobs (some of which wait,
// each for its reason), opens the dashboard in headless Chromium and
// saves PNGs of the overview, the GPU cards (the instances' memory bars
// and the GPUs' health, its charts once they hold some samples), the
// waiting jobs with their reasons, the jobs, a job's page, the kernel
// schedulers and the plan. Then it cancels the jobs and stops mmkd. The
// PNGs are stored at the best compression.
//
//	go run ./bench/screenshots -o docs/img                               # builds mmkd first
//	go run ./bench/screenshots -mmkd bin/mmkd -fakes bin/fake -o docs/img  # make screenshots
//
// With -fakes (the folder make hook-fakes fills: the hook, a fake CUPTI
// and the replay job), kernel scheduling is on (policy fikit+mmk) and
// some jobs replay kernel traces through the hook, so that the kernel
// scheduler page has tasks, counters and a timeline; without it, kernel
// scheduling is off.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mmkgpu/mmk/web/uitest"
)

func main() {
	out := flag.String("o", "docs/img", "folder of the PNGs")
	mmkd := flag.String("mmkd", "", "mmkd binary (empty: go build ./cmd/mmkd)")
	fakes := flag.String("fakes", "", "folder of make hook-fakes (libmmkhook.so, libfakecupti.so, replay): kernel scheduling on, jobs replaying kernels")
	width := flag.Int("width", 1280, "window width (CSS pixels)")
	height := flag.Int("height", 800, "window height (CSS pixels)")
	flag.Parse()
	if err := run(*out, *mmkd, *fakes, *width, *height); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func run(out, mmkd, fakes string, width, height int) error {
	browser, err := uitest.Find()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mmk-screenshots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if mmkd == "" {
		mmkd = filepath.Join(tmp, "mmkd")
		build := exec.Command("go", "build", "-o", mmkd, "./cmd/mmkd")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build mmkd: %w", err)
		}
	}
	d, err := startMMKD(mmkd, filepath.Join(tmp, "data"), fakes)
	if err != nil {
		return err
	}
	defer d.stop()

	ids, err := d.submitDemo(tmp, fakes)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, err := uitest.Start(context.Background(), browser, width, height, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(b.Ctx, 2*time.Minute)
	defer cancel()
	base := "http://" + d.addr + "/"
	// Each shot: the file, the page, a script that sets it up, what it
	// must show, and the element to take (empty: the window).
	shots := []struct {
		file, hash, setup, ready, element string
	}{
		{"overview.png", "#/", "", `document.querySelectorAll('article.gpu').length === 3 && document.querySelectorAll('.inst .job').length >= 4 &&
			document.querySelectorAll('#gpus .health .hcell').length === 9`, ""},
		// The health charts once they hold a few seconds of samples.
		{"gpus.png", "#/", "", `[...document.querySelectorAll('#gpus svg.hchart[data-metric="powerW"]')].every(s => Number(s.dataset.points) >= ` + fmt.Sprint(healthSamples) + `) &&
			document.querySelectorAll('#gpus .membar[data-measured="true"]').length === 6`, "#gpus"},
		{"waiting.png", "#/", "", `document.querySelectorAll('#waiting .wait-reason').length >= 3`, "#view-overview .two > div"},
		// The table under the submission form, filled in.
		{"jobs.png", "#/jobs", `document.getElementById('new-job').click();
			document.getElementById('s-command').value = 'python3\ntrain.py\n--epochs=90';
			document.getElementById('s-name').value = 'resnet50-train-2';
			document.getElementById('s-memory').value = '12GiB';
			document.getElementById('s-env').value = 'DATA=/data/imagenet';
			document.getElementById('s-model').value = 'resnet50';
			document.getElementById('s-batch').value = '64';`, `document.querySelectorAll('#jobs-body tr').length >= 6`, ""},
		{"job.png", "#/jobs/" + ids.logged, "", `document.querySelector('#job-log').textContent.includes('epoch 30') && document.querySelectorAll('#job-events tr').length >= 3`, ""},
		// One second: single kernels, the online task's first.
		{"kernelsched.png", "#/sched", `const w = document.getElementById('sched-window'); w.value = '1000'; w.dispatchEvent(new Event('change'));`,
			`document.querySelectorAll('article.sched').length > 0 || document.querySelector('#scheds .empty') !== null`, ""},
		{"plan.png", "#/plan", "", `document.querySelectorAll('#plan-body tr').length >= 6`, ""},
	}
	// The page asks for mmkd's token; it keeps it in the tab's
	// sessionStorage, where it is put before the page loads again.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height)), chromedp.Navigate(base),
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem('mmk.token', `+jsString(d.token)+`)`), chromedp.Navigate(base)); err != nil {
		return err
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#conn').dataset.state === 'live'`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		return fmt.Errorf("the dashboard did not go live: %w", err)
	}
	for _, s := range shots {
		if fakes == "" && s.file == "kernelsched.png" {
			continue
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = `+jsString(s.hash)+`;`+s.setup)); err != nil {
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](s.ready, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
			return fmt.Errorf("%s: the page did not show what it should: %w", s.file, err)
		}
		if s.file == "kernelsched.png" {
			// A timeline with a few seconds of kernels in it.
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('#scheds table.tasks tbody tr td:not(.muted)').length > 0`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				return fmt.Errorf("%s: no task connected to a kernel scheduler: %w", s.file, err)
			}
			time.Sleep(3 * time.Second)
		}
		// Let the last update paint.
		time.Sleep(300 * time.Millisecond)
		shot := chromedp.CaptureScreenshot()
		if s.element != "" {
			shot = chromedp.Screenshot(chromedp.CSS(s.element))
		}
		png, err := chromedp.Run(ctx, shot)
		if err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
		if png, err = recompress(png); err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
		p := filepath.Join(out, s.file)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d KB\n", p, (len(png)+1023)/1024)
	}
	if foreign := b.Foreign("http://" + d.addr); len(foreign) > 0 {
		return fmt.Errorf("the page made requests to other hosts: %v", foreign)
	}
	if p := b.Problems(); len(p) > 0 {
		return fmt.Errorf("the page reported problems: %v", p)
	}
	return nil
}

// healthSamples is how many samples of the GPUs' health the charts of
// gpus.png hold: some seconds of the fake GPUs' power and temperature.
const healthSamples = 20

// recompress encodes a PNG again at the best compression (Chromium's
// are larger); it keeps the original where that is smaller.
func recompress(b []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("read the screenshot: %w", err)
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, img); err != nil {
		return nil, fmt.Errorf("write the screenshot: %w", err)
	}
	if out.Len() >= len(b) {
		return b, nil
	}
	return out.Bytes(), nil
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// daemon is the mmkd the screenshots are taken of; token is the one it
// wrote to its data directory.
type daemon struct {
	cmd   *exec.Cmd
	addr  string
	token string
	log   *bytes.Buffer
}

func startMMKD(bin, dir, fakes string) (*daemon, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--backend", "fake", "--data-dir", dir, "--listen", addr)
	// The demo's jobs run as whoever takes the screenshots, root too.
	cmd.Env = append(os.Environ(), "MMK_KERNELSCHED_ENABLED=false", "MMK_JOBS_ALLOW_ROOT=true")
	if fakes != "" {
		abs, err := filepath.Abs(fakes)
		if err != nil {
			return nil, err
		}
		// fikit+mmk rather than the default fifo (whose hooks report
		// nothing): the page shows what a kernel policy does.
		cmd.Env = append(os.Environ(), "MMK_KERNELSCHED_ENABLED=true", "MMK_KERNELSCHED_HOOK="+filepath.Join(abs, "libmmkhook.so"),
			"MMK_KERNELSCHED_CUPTI="+filepath.Join(abs, "libfakecupti.so"), "MMK_KERNELSCHED_POLICY=fikit+mmk", "MMK_JOBS_ALLOW_ROOT=true")
	}
	d := &daemon{cmd: cmd, addr: addr, log: &bytes.Buffer{}}
	cmd.Stderr = d.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if tok, err := os.ReadFile(filepath.Join(dir, "token")); err == nil {
			d.token = strings.TrimSpace(string(tok))
		}
		if d.token != "" && d.call("GET", "/readyz", nil, nil) == nil {
			return d, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("mmkd did not become ready:\n%s", d.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop cancels every job that has not ended (jobs outlive mmkd), then
// stops mmkd.
func (d *daemon) stop() {
	var list []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if err := d.call("GET", "/api/v1/jobs?state=pending,placed,running,restarting", nil, &list); err == nil {
		for _, j := range list {
			_ = d.call("POST", "/api/v1/jobs/"+j.ID+"/cancel", nil, nil)
		}
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var left []struct{}
			if d.call("GET", "/api/v1/jobs?state=placed,running,restarting", nil, &left) != nil || len(left) == 0 {
				break
			}
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
}

func (d *daemon) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// waitRunning waits until n jobs run.
func (d *daemon) waitRunning(n int) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var running []job
		if err := d.call("GET", "/api/v1/jobs?state=running", nil, &running); err != nil {
			return err
		}
		if len(running) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs run, not %d:\n%s", len(running), n, d.log)
		}
	}
}

// demo are the ids the screenshots need.
type demo struct{ logged string }

type job struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

func (d *daemon) submit(spec map[string]any) (string, error) {
	var j job
	if err := d.call("POST", "/api/v1/jobs", spec, &j); err != nil {
		return "", err
	}
	return j.ID, nil
}

// submitDemo submits a node's worth of jobs: online services and
// training jobs sharing instances, a job with a log, a job that ended
// well, one that failed and one that waits.
func (d *daemon) submitDemo(tmp, fakes string) (demo, error) {
	var out demo
	long := []string{"sleep", "600"}
	replay := func(name string, kernelUs, gapUs, n int) []string {
		if fakes == "" {
			return long
		}
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "k%d 64 1 1 256 1 1 %d %d\n", i%5, kernelUs, gapUs)
		}
		b.WriteString("sync 2000\n")
		p := filepath.Join(tmp, name+".trace")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return long
		}
		abs, _ := filepath.Abs(filepath.Join(fakes, "replay"))
		return []string{abs, p, "0", "600"}
	}
	specs := []map[string]any{
		{"name": "resnet50-serve", "type": "online", "memory": "8GiB", "workload": map[string]any{"model": "resnet50", "batch": 1, "mode": "infer"},
			"command": replay("resnet50-serve", 300, 900, 20)},
		{"name": "bert-finetune", "type": "offline", "memory": "16GiB", "workload": map[string]any{"model": "bert", "batch": 32, "mode": "train"},
			"command": replay("bert-finetune", 1500, 20, 40)},
		{"name": "vgg19-train", "type": "offline", "memory": "20GiB", "workload": map[string]any{"model": "vgg19", "batch": 32, "mode": "train"}, "command": long},
		{"name": "gpt2-serve", "type": "online", "memory": "12GiB", "workload": map[string]any{"model": "gpt2", "batch": 1, "mode": "infer"}, "command": long},
		{"name": "mobilenet-train", "type": "offline", "memory": "6GiB", "workload": map[string]any{"model": "mobilenet_v2", "batch": 64, "mode": "train"}, "command": long},
		{"name": "embeddings-batch", "type": "offline", "memory": "30GiB", "command": long},
		{"name": "preprocess", "type": "offline", "memory": "2GiB", "command": []string{"sh", "-c", "echo tokenising shards; sleep 0.2; echo done"}},
		{"name": "broken-config", "type": "offline", "memory": "2GiB", "command": []string{"sh", "-c", "echo 'config.yaml: no such file' >&2; exit 3"}},
		{"name": "llm-train-xxl", "type": "offline", "memory": "130GiB", "command": long},
		// Larger than any H100 instance, and the H200 is full: they wait,
		// each saying so.
		{"name": "vit-huge-train", "type": "offline", "memory": "48GiB", "command": long},
		{"name": "sdxl-serve", "type": "online", "memory": "44GiB", "command": long},
	}
	// First two jobs too large for an H100 instance: they share the
	// H200, the online one's kernels first.
	pair := []map[string]any{
		{"name": "llm-serve", "type": "online", "memory": "60GiB", "command": replay("llm-serve", 400, 600, 30)},
		{"name": "llm-finetune", "type": "offline", "memory": "70GiB", "command": replay("llm-finetune", 1200, 50, 60)},
	}
	for _, s := range pair {
		if _, err := d.submit(s); err != nil {
			return out, err
		}
	}
	if err := d.waitRunning(len(pair)); err != nil {
		return out, err
	}
	logged, err := d.submit(map[string]any{"name": "resnet50-train", "type": "offline", "memory": "10GiB",
		"workload": map[string]any{"model": "resnet50", "batch": 64, "mode": "train"},
		"env":      map[string]any{"EPOCHS": "90", "DATA": "/data/imagenet"},
		"command": []string{"sh", "-c", `i=1; while [ $i -le 30 ]; do echo "epoch $i/90  loss $((200 - i*3))e-2  top1 $((40 + i))%  $((1200 + i*7)) img/s"; i=$((i+1)); done; ` +
			`echo "checkpoint saved to $MMK_CHECKPOINT_DIR/epoch30.pt"; sleep 600`}})
	if err != nil {
		return out, err
	}
	out.logged = logged
	if err := d.waitRunning(len(pair) + 1); err != nil {
		return out, err
	}
	for _, s := range specs {
		if _, err := d.submit(s); err != nil {
			return out, err
		}
	}
	// Wait until the jobs have settled: the short ones ended, the rest
	// running or waiting.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var busy []job
		if err := d.call("GET", "/api/v1/jobs?state=placed,restarting", nil, &busy); err != nil {
			return out, err
		}
		var ended []job
		if err := d.call("GET", "/api/v1/jobs?state=succeeded,failed", nil, &ended); err != nil {
			return out, err
		}
		if len(busy) == 0 && len(ended) == 2 {
			return out, nil
		}
	}
	return out, fmt.Errorf("the demo jobs did not settle:\n%s", d.log)
}
