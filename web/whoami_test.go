package web

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
)

// TestWhoAmI: /api/v1/whoami tells a client (the dashboard) who mmkd
// takes it for and whether its jobs would run: the token's holder of an
// mmkd that runs as root is root, whose jobs are refused without
// jobs.allow_root, with the reason the submission would get; with it on,
// or for a user of the socket, it may submit.
func TestWhoAmI(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.TokenOwner = &jobs.Owner{UID: 0, GID: 0, Name: "root"} })
	ts.node.SetAllowRoot(false)
	r := ts.do(t, "GET", "/api/v1/whoami", "")
	if r.code != 200 {
		t.Fatalf("GET /api/v1/whoami = %d %s", r.code, r.body)
	}
	w := decode[WhoAmI](t, r.body)
	if w.User.UID != 0 || !w.Admin || w.MaySubmit || !strings.Contains(w.SubmitRefused, "allow_root") || w.Over != "tcp" {
		t.Errorf("the token's holder as root without jobs.allow_root: %+v, want root, admin, over tcp, no submitting, naming jobs.allow_root", w)
	}
	// The refusal is the one a submission gets.
	if s := ts.do(t, "POST", "/api/v1/jobs", `{"command":["id"]}`); s.code != 403 || !strings.Contains(s.body, w.SubmitRefused) {
		t.Errorf("a submission = %d %s; whoami said %q", s.code, s.body, w.SubmitRefused)
	}

	ts.node.SetAllowRoot(true)
	if w := decode[WhoAmI](t, ts.do(t, "GET", "/api/v1/whoami", "").body); !w.MaySubmit || w.SubmitRefused != "" {
		t.Errorf("with jobs.allow_root: %+v, want may submit", w)
	}

	ts.node.SetAllowRoot(false)
	req := localRequest("GET", "/api/v1/whoami", nil)
	req = req.WithContext(context.WithValue(req.Context(), peerKey{}, Peer{PID: 1, UID: 65534, GID: 65534}))
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, req)
	// An mmkd not run as root runs jobs as itself only (node.MayRunAs).
	want := os.Geteuid() == 0
	if w := decode[WhoAmI](t, rec.Body.String()); w.User.UID != 65534 || w.Admin || w.MaySubmit != want || w.Over != "socket" {
		t.Errorf("a user of the socket: %d %+v, want uid 65534, not admin, may submit %v, over the socket", rec.Code, w, want)
	}
}
