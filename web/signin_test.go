package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSignIn: GET /api/v1/signin answers without the token where the
// token lives (the file on the node, or the configuration's
// server.token), never the token; it answers only to the hosts the API
// answers to.
func TestSignIn(t *testing.T) {
	tests := []struct {
		name, token, file, host, remote string
		code                            int
		want                            string
	}{
		{"token file", "s3cret-Tok", "/var/lib/mmk/token", "", "127.0.0.1:40000", 200, `{"tokenRequired":true,"tokenFile":"/var/lib/mmk/token"}`},
		{"token file, a caller elsewhere (no path: it names the user's home)", "s3cret-Tok", "/home/alice/.local/state/mmk/token", "", "192.0.2.7:40000", 200, `{"tokenRequired":true,"tokenFile":"DATA_DIR/token"}`},
		{"token of the configuration", "s3cret-Tok", "", "", "", 200, `{"tokenRequired":true,"tokenSetting":"server.token"}`},
		{"no token", "", "", "", "", 200, `{"tokenRequired":false}`},
		{"another host's page (DNS rebinding)", "s3cret-Tok", "/var/lib/mmk/token", "evil.example", "", 421, `"field":"Host"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, func(o *Options) { o.Token, o.TokenFile = tt.token, tt.file })
			req := localRequest("GET", "/api/v1/signin", nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.remote != "" {
				req.RemoteAddr = tt.remote
			}
			rec := httptest.NewRecorder()
			ts.Handler().ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != tt.code || strings.TrimSpace(body) != tt.want && !strings.Contains(body, tt.want) {
				t.Errorf("signin = %d %s, want %d %s", rec.Code, body, tt.code, tt.want)
			}
			if tt.token != "" && strings.Contains(body, tt.token) {
				t.Errorf("the answer holds the token: %s", body)
			}
		})
	}
}
