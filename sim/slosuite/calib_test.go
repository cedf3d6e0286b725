package slosuite

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestReadCalibration: windows of calibrate.py add up per mix and
// setting; the trainers' speed is their mean against the mix alone; bad
// lines are refused naming the line and the field.
func TestReadCalibration(t *testing.T) {
	good := strings.Join([]string{
		`{"mix": "m", "pass": 0, "setting": "mix alone", "load": "-", "trainers": {"t0-a": {"it_s": 10}, "t1-b": {"it_s": 4}}, "services": {}}`,
		`{"mix": "m", "pass": 0, "setting": "priority", "load": "low", "trainers": {"t0-a": {"it_s": 5}, "t1-b": {"it_s": 4}}, "services": {"s": {"service_ms": [3, 1], "latency_ms": [4, 1]}}}`,
		`{"mix": "m", "pass": 1, "setting": "priority", "load": "high", "trainers": {"t0-a": {"it_s": 5}, "t1-b": {"it_s": 4}}, "services": {"s": {"service_ms": [2], "latency_ms": [9]}}}`,
		`{"mix": "m", "pass": 0, "setting": "suspend", "load": "low", "trainers": {}, "services": {"s": {"service_ms": [1], "latency_ms": [1]}}}`,
		``,
	}, "\n")
	c, err := ReadCalibration(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Mix("m")
	if m == nil || len(c.Mixes) != 1 || !slicesEqual(c.Services, []string{"s"}) {
		t.Fatalf("mixes %v services %v", c.Mixes, c.Services)
	}
	p := m.Settings["priority"]
	if want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}; !slicesEqual(p.Service["s"], want) {
		t.Errorf("service times %v, want %v (every window's, sorted)", p.Service["s"], want)
	}
	if len(p.Loads["s"]["low"]) != 2 || len(p.Loads["s"]["high"]) != 1 {
		t.Errorf("per load %v", p.Loads["s"])
	}
	if p.Speed != 0.75 {
		t.Errorf("priority's speed %v, want 0.75 (a at half its speed alone, b at its own)", p.Speed)
	}
	if s := m.Settings["suspend"].Speed; s != 0 {
		t.Errorf("suspend's speed %v, want 0", s)
	}
	if !m.Has([]string{"priority", "suspend"}, []string{"s"}) || m.Has([]string{"tpcs=0.5"}, []string{"s"}) {
		t.Error("Has")
	}
	bad := []struct{ name, line, want string }{
		{"not json", `{"mix":`, "line 1"},
		{"no mix", `{"setting": "priority"}`, "no mix"},
		{"no setting", `{"mix": "m"}`, "no setting"},
		{"lengths", `{"mix": "m", "setting": "x", "services": {"s": {"service_ms": [1], "latency_ms": []}}}`, `service "s": 1 service times and 0 latencies`},
		{"latency below service", `{"mix": "m", "setting": "x", "services": {"s": {"service_ms": [2], "latency_ms": [1]}}}`, `service "s": request 0`},
		{"negative speed", `{"mix": "m", "setting": "x", "trainers": {"t": {"it_s": -1}}}`, `trainer "t"`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCalibration(strings.NewReader(tc.line))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	if _, err := ReadCalibration(strings.NewReader("")); err == nil {
		t.Error("an empty calibration was taken")
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzReadCalibration: no input panics the reader; what it takes has
// service times no longer than latencies.
func FuzzReadCalibration(f *testing.F) {
	f.Add([]byte(`{"mix": "m", "setting": "priority", "load": "low", "trainers": {"t": {"it_s": 5}}, "services": {"s": {"service_ms": [3], "latency_ms": [4]}}}`))
	f.Add([]byte(`{"mix": "m", "setting": "mix alone", "trainers": {"t": {"it_s": 1e308}}}` + "\n" + `{"mix": "m", "setting": "x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadCalibration(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, m := range c.Mixes {
			for _, s := range m.Settings {
				for name, v := range s.Service {
					if len(v) != len(s.Latency[name]) {
						t.Fatalf("%s %s: %d service times, %d latencies", m.Name, name, len(v), len(s.Latency[name]))
					}
				}
			}
		}
	})
}

// TestBuiltinCalibration: the H200 calibration built in holds four
// mixes (one, two and three trainers), three services and nine settings
// each, every service measured under every setting; suspend runs no
// trainer.
func TestBuiltinCalibration(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Mixes) != 4 || len(c.Services) != 3 {
		t.Fatalf("%d mixes, services %v", len(c.Mixes), c.Services)
	}
	settings := []string{"priority", "tpcs=0.97", "tpcs=0.75", "tpcs=0.5", "tpcs=0.25", "hold", "suspend", "prio+70%", "prio+50%"}
	for _, m := range c.Mixes {
		if !m.Has(settings, c.Services) {
			t.Errorf("mix %s lacks a setting or a service: %v", m.Name, m.SettingNames())
		}
		for _, s := range settings {
			sp := m.Settings[s].Speed
			if s == "suspend" && sp != 0 || s != "suspend" && !(sp > 0.2 && sp < 1.5) {
				t.Errorf("mix %s %s: speed %v", m.Name, s, sp)
			}
		}
	}
}
