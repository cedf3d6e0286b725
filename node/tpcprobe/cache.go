package tpcprobe

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/slo"
)

// kept is a map as CacheDir keeps it: the driver it was taken under and
// the check it passed.
type kept struct {
	Driver     string          `json:"driver"`
	CheckSlots int             `json:"checkSlots"`
	Map        json.RawMessage `json:"map"`
}

// safeUUIDChars are the characters of a GPU UUID fit for a file name
// (NVML's "GPU-" and hex), at most 80 of them (safeUUID; the length is
// checked apart: a bounded repetition compiles to a program as long as
// its bound, at every start of mmkd).
var safeUUIDChars = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

// safeUUID reports a GPU UUID fit for a file name.
func safeUUID(uuid string) bool { return len(uuid) <= 80 && safeUUIDChars.MatchString(uuid) }

// path is the file of uuid's map ("": none kept, for want of a cache
// directory, a driver version or a UUID fit for a file name).
func (m *Mapper) path(uuid string) string {
	if m.CacheDir == "" || m.Driver == "" || !safeUUID(uuid) {
		return ""
	}
	return filepath.Join(m.CacheDir, uuid+".json")
}

// Cached is uuid's map kept for this driver, if any and whole: a file
// that does not parse, or is of another driver or GPU, is not used (it
// is replaced once the GPU is mapped again).
func (m *Mapper) Cached(uuid string) (Mapped, bool) {
	p := m.path(uuid)
	if p == "" {
		return Mapped{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Mapped{}, false
	}
	var k kept
	if json.Unmarshal(b, &k) != nil || k.Driver != m.Driver {
		return Mapped{}, false
	}
	tm, err := slo.ParseTPCMap(k.Map)
	if err != nil || tm.UUID != uuid {
		return Mapped{}, false
	}
	got := mappedOf(tm, k.CheckSlots)
	got.Cached = true
	return got, true
}

// keep writes uuid's map for the next start (nothing where path says
// none is kept).
func (m *Mapper) keep(uuid string, got Mapped) error {
	p := m.path(uuid)
	if p == "" {
		return nil
	}
	tm, err := json.Marshal(got.Map)
	if err != nil {
		return fmt.Errorf("keep the TPC map of %s: %w", uuid, err)
	}
	b, err := json.Marshal(kept{Driver: m.Driver, CheckSlots: got.CheckSlots, Map: tm})
	if err != nil {
		return fmt.Errorf("keep the TPC map of %s: %w", uuid, err)
	}
	if err := os.MkdirAll(m.CacheDir, 0o755); err != nil {
		return fmt.Errorf("keep the TPC map of %s: %w", uuid, err)
	}
	if err := atomicfile.Write(p, append(b, '\n')); err != nil {
		return fmt.Errorf("keep the TPC map of %s: %w", uuid, err)
	}
	return nil
}

// driverLine finds the kernel module's version in
// /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  580.95.05  ...", or "... Open Kernel Module for x86_64
// 580.95.05 ...").
var driverLine = regexp.MustCompile(`Kernel Module(?: for \S+)?\s+([0-9][0-9.]*)`)

// DriverVersion is the NVIDIA kernel module's version as the file at path
// (/proc/driver/nvidia/version) says it; "" where it cannot be read or
// says none.
func DriverVersion(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if m := driverLine.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}
