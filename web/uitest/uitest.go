// Package uitest drives mmkd's dashboard in a headless Chromium (through
// chromedp) for the end-to-end tests and the screenshot command. It finds
// the browser, starts it with nothing that reaches the network by itself,
// and records what the page does that a test should see: every request
// it makes (to check that none goes to another host than the daemon),
// its uncaught exceptions, console errors and Content-Security-Policy
// violations.
package uitest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ErrNoBrowser is returned by Find when no Chromium is installed.
var ErrNoBrowser = errors.New("no Chromium found (install Debian's chromium package, or set MMK_CHROMIUM to a Chrome or Chromium binary)")

// Find returns the path of the browser: $MMK_CHROMIUM, else the first of
// chromium, chromium-browser, google-chrome and headless-shell on PATH.
func Find() (string, error) {
	if p := os.Getenv("MMK_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("MMK_CHROMIUM: %w", err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Browser is one headless Chromium tab and what its pages did.
type Browser struct {
	// Ctx runs chromedp actions in the tab.
	Ctx    context.Context
	cancel func()

	mu       sync.Mutex
	requests []string
	problems []string
}

// Start starts the browser at path with a window of width x height CSS
// pixels; Close stops it. logf, if set, receives chromedp's errors.
func Start(ctx context.Context, path string, width, height int, logf func(string, ...any)) (*Browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(width, height),
		// As root (CI's containers) Chromium refuses to start sandboxed.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	var copts []chromedp.ContextOption
	if logf != nil {
		copts = append(copts, chromedp.WithErrorf(logf))
	}
	bctx, bcancel := chromedp.NewContext(actx, copts...)
	b := &Browser{Ctx: bctx, cancel: func() { bcancel(); acancel() }}
	if err := chromedp.Listen(bctx, b.record); err != nil {
		b.cancel()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return b, nil
}

// record keeps what a test checks; it runs on chromedp's event loop and
// must not block.
func (b *Browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Request != nil {
			b.requests = append(b.requests, ev.Request.URL)
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, "exception: "+msg)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, strings.Trim(string(a.Value), `"`))
				}
			}
			b.problems = append(b.problems, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		e := ev.Entry
		// A refused request (the 401 before the token is entered) is
		// logged by the network source: expected, not a problem.
		if e.Source == log.EntrySourceNetwork {
			return
		}
		if e.Level == log.EntryLevelError || strings.Contains(e.Text, "Content Security Policy") {
			b.problems = append(b.problems, "log "+string(e.Source)+": "+e.Text)
		}
	}
}

// Requests are the URLs of every request the tab's pages made, in order.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// Problems are the page's uncaught exceptions, console errors and
// security (CSP) errors, in order.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// Foreign returns the requests that went anywhere but origin (scheme and
// host, "http://127.0.0.1:7070"): another host, another port, or a
// scheme such as data: or ws:.
func (b *Browser) Foreign(origin string) []string {
	var out []string
	for _, r := range b.Requests() {
		u, err := url.Parse(r)
		if err != nil || u.Scheme+"://"+u.Host != origin {
			out = append(out, r)
		}
	}
	return out
}

// Close stops the browser.
func (b *Browser) Close() { b.cancel() }
