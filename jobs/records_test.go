package jobs

import (
	"strings"
	"testing"
	"time"
)

func TestParseLaunch(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		err  string // "" for a valid record
	}{
		{"valid", `{"version":1,"argv":["sh","-c","true"],"env":["A=b"],"dir":"/tmp"}`, ""},
		{"unknown fields are ignored", `{"version":1,"argv":["x"],"dir":"/","later":true}`, ""},
		{"not JSON", `argv=sh`, "launch record"},
		{"no version", `{"argv":["x"],"dir":"/"}`, "record version 0"},
		{"newer version", `{"version":2,"argv":["x"],"dir":"/"}`, "record version 2"},
		{"no program", `{"version":1,"argv":[],"dir":"/"}`, "no program"},
		{"empty program", `{"version":1,"argv":[""],"dir":"/"}`, "no program"},
		{"relative dir", `{"version":1,"argv":["x"],"dir":"tmp"}`, "not an absolute path"},
		{"NUL in argv", `{"version":1,"argv":["x","a\u0000b"],"dir":"/"}`, "NUL"},
		{"env without =", `{"version":1,"argv":["x"],"env":["A"],"dir":"/"}`, "KEY=VALUE"},
		{"env with empty key", `{"version":1,"argv":["x"],"env":["=b"],"dir":"/"}`, "KEY=VALUE"},
		{"negative log cap", `{"version":1,"argv":["x"],"dir":"/","logMaxBytes":-1}`, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseLaunch([]byte(tc.data))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("parseLaunch: %v, want %q", err, tc.err)
			}
		})
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	pid := pidRecord{Version: recordVersion, Child: procIdent{PID: 10, StartTicks: 5, BootID: "b"}, Shim: procIdent{PID: 9, StartTicks: 4, BootID: "b"}, StartedAt: at}
	exit := Exit{Code: -1, Signal: "SIGKILL", At: at}
	if err := writeRecord(dir, pidFile, pid); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(dir, exitFile, exitRecord{Version: recordVersion, Exit: exit}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := readRecord(dir, pidFile, parsePidRecord); err != nil || !found || got != pid {
		t.Fatalf("pid record %+v %v %v, want %+v", got, found, err, pid)
	}
	if got, found, err := readRecord(dir, exitFile, parseExitRecord); err != nil || !found || got != exit {
		t.Fatalf("exit record %+v %v %v, want %+v", got, found, err, exit)
	}
	if _, found, err := readRecord(dir, stopFile, parseStopRecord); err != nil || found {
		t.Fatalf("missing stop record: %v %v, want not found and no error", found, err)
	}
}

// FuzzRecords: no record parser panics, whatever the file holds.
func FuzzRecords(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"argv":["sh","-c","true"],"env":["A=b"],"dir":"/tmp","logMaxBytes":10}`,
		`{"version":1,"child":{"pid":10,"startTicks":5,"bootID":"x"},"shim":{"pid":9},"startedAt":"2026-11-23T10:00:00Z"}`,
		`{"version":1,"code":-1,"signal":"SIGKILL","at":"2026-11-23T10:00:00Z","error":"x"}`,
		`{"version":1,"graceNs":1000}`,
		"1 (sh) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
		"", "null", "[]", `{"version":"1"}`, "1 (a) b) Z",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if l, err := parseLaunch(data); err == nil && (len(l.Argv) == 0 || l.Argv[0] == "") {
			t.Fatalf("parseLaunch accepted %q without a program", data)
		}
		if p, err := parsePidRecord(data); err == nil && (p.Child.PID <= 0 || p.Shim.PID <= 0) {
			t.Fatalf("parsePidRecord accepted %q with pids %d %d", data, p.Child.PID, p.Shim.PID)
		}
		_, _ = parseExitRecord(data)
		if s, err := parseStopRecord(data); err == nil && s.Grace < 0 {
			t.Fatalf("parseStopRecord accepted a negative grace in %q", data)
		}
		_, _ = parseStat(data)
	})
}
