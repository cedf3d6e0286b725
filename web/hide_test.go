package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// TestEnvHiddenFromOtherUsers (issue 38, row 11): a job's environment
// values are its owner's and the admins' (root, mmkd's user, the
// token's holder); any other user of the socket sees the keys with
// "(hidden)" for values, in a job, a list, a cancel's answer and a
// stream's snapshot and updates. Before the fix every socket user saw
// every job's values.
func TestEnvHiddenFromOtherUsers(t *testing.T) {
	mmkdUser := jobs.Owner{UID: 1000, GID: 1000, Name: "mmk"}
	const token = "0123456789abcdef-token"
	ts, _ := streamServer(t, 20*time.Millisecond, time.Hour, func(o *Options) {
		o.Token, o.TokenOwner = token, &mmkdUser
	})
	// A request with X-Test-Peer-UID comes "over the socket" from that
	// uid; one without it over TCP with the token.
	peered := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("X-Test-Peer-UID"); v != "" {
			uid, _ := strconv.Atoi(v)
			r = r.WithContext(context.WithValue(r.Context(), peerKey{}, Peer{PID: 1, UID: uid, GID: uid}))
		} else {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		ts.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(peered.Close)
	call := func(t *testing.T, uid, method, path, body string) (int, string) {
		t.Helper()
		req := localRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if uid != "" {
			req = req.WithContext(context.WithValue(req.Context(), peerKey{}, Peer{PID: 1, UID: atoi(t, uid), GID: atoi(t, uid)}))
		} else {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := call(t, "1001", "POST", "/api/v1/jobs", `{"name":"alice","command":["sleep","9"],"env":{"HF_TOKEN":"s3cret-value"}}`)
	if code != http.StatusCreated || !strings.Contains(body, "s3cret-value") {
		t.Fatalf("alice's submit = %d %s, want 201 with her own environment", code, body)
	}
	alice := decode[jobs.Job](t, body)

	for _, tc := range []struct {
		name string
		uid  string // "": the token's holder over TCP
		sees bool
	}{
		{"the owner", "1001", true},
		{"another user", "1002", false},
		{"root", "0", true},
		{"mmkd's user", "1000", true},
		{"the token's holder", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(t *testing.T, what, body string) {
				t.Helper()
				if !strings.Contains(body, "HF_TOKEN") {
					t.Errorf("%s lacks the key: %s", what, body)
				}
				if got := strings.Contains(body, "s3cret-value"); got != tc.sees {
					t.Errorf("%s shows the value: %v, want %v: %s", what, got, tc.sees, body)
				}
				if !tc.sees && !strings.Contains(body, `"HF_TOKEN":"(hidden)"`) {
					t.Errorf("%s does not say the value is hidden: %s", what, body)
				}
			}
			_, body := call(t, tc.uid, "GET", "/api/v1/jobs/"+alice.ID, "")
			check(t, "GET /jobs/ID", body)
			_, body = call(t, tc.uid, "GET", "/api/v1/jobs", "")
			check(t, "GET /jobs", body)

			var header []string
			if tc.uid != "" {
				header = []string{"X-Test-Peer-UID", tc.uid}
			}
			c := openStream(t, peered, "", header...)
			check(t, "the stream's snapshot", c.next(t, "snapshot").data)
			if err := ts.node.SetState(alice.ID, jobs.Running, "a change for "+tc.name); err != nil {
				t.Fatal(err)
			}
			check(t, "the stream's update", c.next(t, "jobs").data)
		})
	}
	code, body = call(t, "1001", "POST", "/api/v1/jobs/"+alice.ID+"/cancel", "")
	if code != http.StatusOK {
		t.Fatalf("alice's cancel = %d %s", code, body)
	}
	if !strings.Contains(body, "s3cret-value") {
		t.Errorf("alice's cancel answer hides her own environment: %s", body)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCancelPendingIs503 (issue 38, row 6): a cancel whose stop could
// not reach the job's process is answered 503 with Retry-After, naming
// the error, not 200 "cancelled". Before the fix it was 200.
func TestCancelPendingIs503(t *testing.T) {
	ts := newTestServer(t)
	j := ts.submit(t, `{"name":"x","command":["true"]}`)
	ts.node.Fail(fmt.Errorf("job %s: %w: its process runs on: signal shim: input/output error", j.ID, node.ErrCancelPending))
	r := ts.do(t, http.MethodPost, "/api/v1/jobs/"+j.ID+"/cancel", "")
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.apiErr(t).Message, "input/output error") {
		t.Fatalf("cancel = %d %s (Retry-After %q), want 503 naming the error with Retry-After", r.code, r.body, r.header.Get("Retry-After"))
	}
}
