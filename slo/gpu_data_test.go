package slo

import (
	"encoding/json"
	"os"
	"testing"
)

// benchRecording is what bench/gpu/slo_recording.py keeps of an SLO
// benchmark round: the phases' rates, and per setting and phase the
// batch-32 service's latencies, service times and arrivals (ms, s) and
// the trainers' speed.
type benchRecording struct {
	Rates    map[string]float64              `json:"rates"`
	Latency  map[string]map[string][]float64 `json:"latency"`
	Trainers map[string]map[string]float64   `json:"trainers"`
	Service  map[string]map[string][]float64 `json:"service"`
	Arrivals map[string]map[string][]float64 `json:"arrivals"`
}

func loadRecording(t *testing.T, file string) benchRecording {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r benchRecording
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return r
}
