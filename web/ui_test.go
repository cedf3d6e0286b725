package web

import (
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestUIAssets checks the dashboard's files: the page at /, its files
// under /ui/, each with its type and the Content-Security-Policy, served
// without the token; unknown files 404; the API's own answers
// unchanged, token included.
func TestUIAssets(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.Token = "s3cret" })
	tests := []struct {
		path     string
		status   int
		ctype    string
		contains string
	}{
		{"/", 200, "text/html; charset=utf-8", `<script type="module" src="ui/app.js"></script>`},
		{"/ui/app.js", 200, "text/javascript; charset=utf-8", "import"},
		{"/ui/style.css", 200, "text/css; charset=utf-8", ".gpu"},
		{"/ui/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"/ui/index.html", 200, "text/html; charset=utf-8", "<main>"},
		{"/ui/nope.js", 404, "application/json; charset=utf-8", `"error":"no dashboard file nope.js"`},
		{"/ui/", 404, "application/json; charset=utf-8", `"error":"no dashboard file "`},
		{"/ui/%2e%2e/ui.go", 404, "application/json; charset=utf-8", "no dashboard file"},
		// The API is untouched: its 404s and 401s are its own.
		{"/api/v1/nope", 401, "application/json; charset=utf-8", "requires a token"},
		{"/nope", 401, "application/json; charset=utf-8", "requires a token"},
		{"/api/v1/jobs", 401, "application/json; charset=utf-8", "requires a token"},
		{"/healthz", 200, "application/json; charset=utf-8", `"status":"ok"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := ts.do(t, "GET", tt.path, "")
			if r.code != tt.status || r.header.Get("Content-Type") != tt.ctype || !strings.Contains(r.body, tt.contains) {
				t.Errorf("GET %s = %d %q %.200s, want %d %q containing %q", tt.path, r.code, r.header.Get("Content-Type"), r.body, tt.status, tt.ctype, tt.contains)
			}
			if tt.status == 200 && strings.HasPrefix(tt.path, "/ui/") || tt.path == "/" {
				if csp := r.header.Get("Content-Security-Policy"); csp != ContentSecurityPolicy {
					t.Errorf("CSP %q", csp)
				}
				if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("ETag") == "" {
					t.Errorf("headers %v", r.header)
				}
			}
		})
	}
	// With the token the API answers as ever.
	if r := ts.do(t, "GET", "/api/v1/nope", "", "Authorization", "Bearer s3cret"); r.code != 404 || !strings.Contains(r.body, "no route GET /api/v1/nope") {
		t.Errorf("GET /api/v1/nope with the token = %d %s", r.code, r.body)
	}
	if r := ts.do(t, "POST", "/", "", "Authorization", "Bearer s3cret"); r.code != 405 {
		t.Errorf("POST / = %d %s", r.code, r.body)
	}
}

// TestUICSPAllowsOnlySelf checks the policy itself: every fetch
// directive is 'self' or 'none', and nothing inline or from elsewhere.
func TestUICSPAllowsOnlySelf(t *testing.T) {
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		f := strings.Fields(d)
		if len(f) < 2 {
			t.Fatalf("directive %q", d)
		}
		for _, v := range f[1:] {
			if v != "'self'" && v != "'none'" {
				t.Errorf("directive %s allows %s", f[0], v)
			}
		}
	}
	if !strings.HasPrefix(ContentSecurityPolicy, "default-src 'none'") {
		t.Errorf("CSP %q does not start by denying everything", ContentSecurityPolicy)
	}
}

// TestUIRevalidates checks that a reload costs a 304.
func TestUIRevalidates(t *testing.T) {
	ts := newTestServer(t)
	first := ts.do(t, "GET", "/ui/app.js", "")
	etag := first.header.Get("ETag")
	if r := ts.do(t, "GET", "/ui/app.js", "", "If-None-Match", etag); r.code != http.StatusNotModified || r.body != "" {
		t.Errorf("GET with If-None-Match %s = %d (%d bytes)", etag, r.code, len(r.body))
	}
	if r := ts.do(t, "GET", "/", ""); r.header.Get("ETag") == etag {
		t.Error("index.html and app.js share an ETag")
	}
}

// TestUIFilesAreSelfContained reads the embedded files: every file the
// page and the modules name is embedded, nothing is loaded from another
// host, and no script writes HTML (user input must stay text).
func TestUIFilesAreSelfContained(t *testing.T) {
	files := uiAssets()
	if len(files) < 8 {
		t.Fatalf("only %d files embedded", len(files))
	}
	refs := regexp.MustCompile(`(?:src|href)="ui/([^"]+)"|from '\./([^']+)'`)
	external := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	htmlSinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	for name, a := range files {
		body := string(a.body)
		for _, m := range refs.FindAllStringSubmatch(body, -1) {
			ref := m[1] + m[2]
			if _, ok := files[ref]; !ok {
				t.Errorf("%s names %s, which is not embedded", name, ref)
			}
		}
		for _, m := range external.FindAllString(body, -1) {
			// SVG's namespace is a name, never fetched.
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to another host: %s", name, m)
			}
		}
		if strings.HasSuffix(name, ".js") {
			if m := htmlSinks.FindString(body); m != "" {
				t.Errorf("%s uses %s: write text (textContent), never HTML", name, m)
			}
		}
	}
	if _, err := fs.Stat(uiFiles, "ui/index.html"); err != nil {
		t.Error(err)
	}
}
