package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
)

func TestAuth(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.Token = "s3cret" })
	tests := []struct {
		name, method, path, auth string
		status                   int
	}{
		{"liveness needs no token", "GET", "/healthz", "", 200},
		{"nor does the sign-in's hint", "GET", "/api/v1/signin", "", 200},
		{"readiness does", "GET", "/readyz", "", 401},
		{"jobs without a token", "GET", "/api/v1/jobs", "", 401},
		{"submit without a token", "POST", "/api/v1/jobs", "", 401},
		{"metrics without a token", "GET", "/metrics", "", 401},
		{"the document without a token", "GET", "/api/v1/openapi.json", "", 401},
		{"unknown route without a token", "GET", "/api/v1/secret", "", 401},
		{"wrong token", "GET", "/api/v1/jobs", "Bearer s3cre", 401},
		{"longer token", "GET", "/api/v1/jobs", "Bearer s3cret2", 401},
		{"basic auth", "GET", "/api/v1/jobs", "Basic czNjcmV0", 401},
		{"scheme alone", "GET", "/api/v1/jobs", "Bearer", 401},
		{"right token", "GET", "/api/v1/jobs", "Bearer s3cret", 200},
		{"scheme in lower case", "GET", "/api/v1/gpus", "bearer s3cret", 200},
		{"metrics with the token", "GET", "/metrics", "Bearer s3cret", 200},
		{"unknown route with the token", "GET", "/api/v1/secret", "Bearer s3cret", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h []string
			if tt.auth != "" {
				h = []string{"Authorization", tt.auth}
			}
			r := ts.do(t, tt.method, tt.path, "", h...)
			if r.code != tt.status {
				t.Fatalf("status %d %s, want %d", r.code, r.body, tt.status)
			}
			if tt.status == 401 {
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
				}
				if e := r.apiErr(t); e.Field != "Authorization" || e.Message == "" {
					t.Errorf("401 body %s", r.body)
				}
			}
		})
	}
}

// TestNoTokenNoAuth checks that a server without a token asks for none.
func TestNoTokenNoAuth(t *testing.T) {
	ts := newTestServer(t)
	if r := ts.do(t, "GET", "/api/v1/jobs", "", "Authorization", "Bearer whatever"); r.code != 200 {
		t.Errorf("without a token = %d %s", r.code, r.body)
	}
}

// TestDNSRebinding: a page of another site whose name was pointed at
// 127.0.0.1 reaches the daemon as a same-origin page would; only its Host
// tells it apart. Without a token too, a submission naming another host
// is refused (421), one from a page of another origin (Origin,
// Sec-Fetch-Site) too (403); the daemon's own names and addresses pass.
func TestDNSRebinding(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.AllowedHosts = []string{"gpu-node-7.example.org"} })
	job := `{"command":["id"]}`
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"rebound name", []string{"Host", "attacker.test"}, 421},
		{"rebound name with a port", []string{"Host", "attacker.test:7070"}, 421},
		{"a subdomain of localhost's lookalike", []string{"Host", "localhost.attacker.test"}, 421},
		{"page of another origin", []string{"Origin", "http://attacker.test"}, 403},
		{"browser says cross-site", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"loopback address", []string{"Host", "127.0.0.1:7070"}, 201},
		{"IPv6 loopback", []string{"Host", "[::1]:7070"}, 201},
		{"localhost", []string{"Host", "localhost:7070"}, 201},
		{"allowed name", []string{"Host", "GPU-node-7.example.org."}, 201},
		{"same origin", []string{"Origin", "http://127.0.0.1:7070"}, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := localRequest("POST", "/api/v1/jobs", strings.NewReader(job))
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(tt.header); i += 2 {
				if tt.header[i] == "Host" {
					req.Host = tt.header[i+1]
				} else {
					req.Header.Set(tt.header[i], tt.header[i+1])
				}
			}
			rec := httptest.NewRecorder()
			ts.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tt.status)
			}
		})
	}
	if list, _ := ts.node.Jobs(nodeFilterAll); len(list) != 5 {
		t.Errorf("%d jobs created, want the 5 allowed submissions", len(list))
	}
}

// TestOwnerRefused: a caller the node may not run jobs as (root, without
// jobs.allow_root) is answered 403, saying why.
func TestOwnerRefused(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.TokenOwner = &jobs.Owner{UID: 0, GID: 0, Name: "root"} })
	ts.node.SetAllowRoot(false)
	r := ts.do(t, "POST", "/api/v1/jobs", `{"command":["id"]}`)
	if r.code != 403 || !strings.Contains(r.body, "allow_root") {
		t.Errorf("a job of root = %d %s, want 403 naming jobs.allow_root", r.code, r.body)
	}
}
