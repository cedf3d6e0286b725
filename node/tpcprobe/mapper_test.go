package tpcprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mmkgpu/mmk/slo"
)

// The test binary is its own fake probe: run with FAKE_TPCPROBE=1 it is
// mmk-tpcprobe on an H100 whose slots are laid out as the measured map
// (slo.H100TPCMap), masked as the hook masks (MMK_TPC_MASK=1 with the
// hook injected: MMK_TPC_OFF's slots, or every slot from MMK_TPC_KEEP on
// to the descriptor's 72). FAKE_NOMASK: the driver refuses the hook's
// callback (nothing masked); FAKE_FAIL: no driver; FAKE_SKEW: a keep
// mask takes one slot more than asked (a driver that numbers otherwise);
// FAKE_LOG: each run appends a line there.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_TPCPROBE") == "1" {
		os.Exit(fakeProbe())
	}
	os.Exit(m.Run())
}

func fakeProbe() int {
	if p := os.Getenv("FAKE_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getenv("MMK_TPC_OFF"), os.Getenv("MMK_TPC_KEEP"))
			f.Close()
		}
	}
	if os.Getenv("FAKE_FAIL") == "1" {
		fmt.Fprintln(os.Stderr, "mmk-tpcprobe: no CUDA driver: libcuda.so.1: cannot open shared object file")
		return 1
	}
	uuid := os.Getenv("CUDA_VISIBLE_DEVICES")
	if uuid == "" {
		fmt.Fprintln(os.Stderr, "mmk-tpcprobe: cuDeviceGet: CUDA error 100")
		return 1
	}
	h := slo.H100TPCMap()
	masked := func(int) bool { return false }
	hook := os.Getenv("CUDA_INJECTION64_PATH")
	if _, err := os.Stat(hook); err == nil && os.Getenv("MMK_TPC_MASK") == "1" && os.Getenv("FAKE_NOMASK") != "1" {
		if off := os.Getenv("MMK_TPC_OFF"); off != "" {
			s, _ := strconv.Atoi(off)
			masked = func(x int) bool { return x == s }
		} else if k := os.Getenv("MMK_TPC_KEEP"); k != "" {
			keep, _ := strconv.Atoi(k)
			if os.Getenv("FAKE_SKEW") == "1" {
				keep--
			}
			masked = func(x int) bool { return x >= keep && x < 72 }
		}
	}
	gone := map[int]bool{}
	for s, sms := range h.TPCs {
		if masked(s) {
			for _, sm := range sms {
				gone[sm] = true
			}
		}
	}
	seen := []int{}
	for sm := range h.SMs {
		if !gone[sm] {
			seen = append(seen, sm)
		}
	}
	b, _ := json.Marshal(reply{GPU: h.GPU, UUID: uuid, SMs: h.SMs, Seen: seen})
	fmt.Println(string(b))
	return 0
}

// fake is a Mapper whose probe is the test binary, with extra in its
// environment.
func fake(t *testing.T, extra ...string) (*Mapper, string) {
	t.Helper()
	dir := t.TempDir()
	hook := filepath.Join(dir, "libmmkhook.so")
	if err := os.WriteFile(hook, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "runs")
	env := append(os.Environ(), "FAKE_TPCPROBE=1", "FAKE_LOG="+log)
	return &Mapper{Probe: self, Hook: hook, CacheDir: filepath.Join(dir, "cache"), Driver: "580.95.05", Env: append(env, extra...)}, log
}

// runs counts the probe runs logged.
func runs(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestMapTakesTheDiesMapAndKeepsIt(t *testing.T) {
	m, log := fake(t)
	var mu sync.Mutex
	var told []int
	got, err := m.Map(context.Background(), "GPU-fake-0", func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if total != 74 {
			t.Errorf("progress total %d, want 74 (unmasked, 72 slots, the check)", total)
		}
		told = append(told, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	h := slo.H100TPCMap()
	if !maps.EqualFunc(got.Map.TPCs, h.TPCs, slices.Equal) || !slices.Equal(got.Map.Holes, h.Holes) || got.Map.UUID != "GPU-fake-0" {
		t.Fatalf("map: %d TPCs, holes %v; want the die's %d, %v", len(got.Map.TPCs), got.Map.Holes, len(h.TPCs), h.Holes)
	}
	if got.Cached || got.CheckSlots != 37 || got.Kept != 33 || got.TPCs != 66 {
		t.Fatalf("got %+v; want probed, checked with 37 slots kept (33 of 66 TPCs)", got)
	}
	slices.Sort(told)
	if len(told) != 74 || told[73] != 74 {
		t.Fatalf("progress told %d times, last %v; want 74", len(told), told[len(told)-1:])
	}
	if n := runs(t, log); n != 74 {
		t.Fatalf("%d probe runs, want 74", n)
	}
	again, err := m.Map(context.Background(), "GPU-fake-0", nil)
	if err != nil || !again.Cached || !maps.EqualFunc(again.Map.TPCs, h.TPCs, slices.Equal) || again.Kept != 33 {
		t.Fatalf("second map: %+v, %v; want the same map from the cache", again, err)
	}
	if n := runs(t, log); n != 74 {
		t.Fatalf("%d probe runs after a cached map, want no more than 74", n)
	}
	// Another driver: probed again.
	m.Driver = "590.1"
	if other, err := m.Map(context.Background(), "GPU-fake-0", nil); err != nil || other.Cached {
		t.Fatalf("under another driver: %+v, %v; want probed again", other, err)
	}
}

func TestMapFails(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		hook  bool // the hook is missing
		want  string
	}{
		{"no driver", []string{"FAKE_FAIL=1"}, false, "no CUDA driver"},
		{"the hook masks nothing", []string{"FAKE_NOMASK=1"}, false, "no slot is a TPC"},
		{"no hook where it is said to be", nil, true, "no slot is a TPC"},
		{"a mask that takes other SMs than the map says", []string{"FAKE_SKEW=1"}, false, "the check: a mask keeping 37 slots should leave"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := fake(t, tc.extra...)
			if tc.hook {
				m.Hook += ".gone"
			}
			_, err := m.Map(context.Background(), "GPU-fake-0", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(m.CacheDir, "GPU-fake-0.json")); !os.IsNotExist(err) {
				t.Fatalf("a failed map was kept (%v)", err)
			}
		})
	}
}

func TestMapNotKeptWithoutDriver(t *testing.T) {
	m, log := fake(t)
	m.Driver = ""
	for range 2 {
		if got, err := m.Map(context.Background(), "GPU-fake-0", nil); err != nil || got.Cached {
			t.Fatalf("%+v, %v", got, err)
		}
	}
	if n := runs(t, log); n != 148 {
		t.Fatalf("%d probe runs, want 148: a map of an unknown driver is not kept", n)
	}
}

func TestCachedIgnoresDamage(t *testing.T) {
	m, log := fake(t)
	if err := os.MkdirAll(m.CacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"{", `{"driver":"580.95.05","map":{"slots":0}}`, `{"driver":"580.95.05","map":{"uuid":"GPU-other","slots":2,"sms":2,"tpcs":{"0":[0,1]},"holes":[1]}}`} {
		if err := os.WriteFile(filepath.Join(m.CacheDir, "GPU-fake-0.json"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := m.Map(context.Background(), "GPU-fake-0", nil); err != nil || got.Cached {
			t.Fatalf("cache %q: %+v, %v; want probed", text, got, err)
		}
	}
	if n := runs(t, log); n != 3*74 {
		t.Fatalf("%d runs, want %d", n, 3*74)
	}
}

func TestDriverVersion(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ text, want string }{
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 11 2025\nGCC version: gcc 12\n", "580.95.05"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.172.08  Release Build\n", "570.172.08"},
		{"something else\n", ""},
	}
	for i, tc := range tests {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := DriverVersion(p); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.want)
		}
	}
	if got := DriverVersion(filepath.Join(dir, "none")); got != "" {
		t.Errorf("no file: %q", got)
	}
}

// TestMapNotKeptStillMaps (a review's finding): a map taken and checked
// that cannot be kept (the cache directory is a file) is returned with
// the reason, not thrown away.
func TestMapNotKeptStillMaps(t *testing.T) {
	m, _ := fake(t)
	if err := os.WriteFile(m.CacheDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := m.Map(context.Background(), "GPU-fake-0", nil)
	if err != nil || got.Map == nil || got.KeepErr == nil || !strings.Contains(got.KeepErr.Error(), "keep the TPC map of GPU-fake-0") {
		t.Fatalf("%+v, %v; want the map, and why it was not kept", got, err)
	}
}
