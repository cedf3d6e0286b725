package web

import (
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.Token = "s3cret" })
	tests := []struct {
		name, method, path, auth string
		status                   int
	}{
		{"liveness needs no token", "GET", "/healthz", "", 200},
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
