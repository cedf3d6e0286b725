package slo

import (
	"math"
	"testing"
	"time"
)

func TestForecast(t *testing.T) {
	tenMs := []time.Duration{10 * ms}
	tests := []struct {
		name      string
		service   []time.Duration
		rate      float64
		bound     time.Duration
		want, tol float64
	}{
		{"no service times", nil, 10, 25 * ms, 1, 0},
		{"no load", tenMs, 0, 25 * ms, 1, 0},
		{"every service time past the bound", []time.Duration{30 * ms}, 1, 25 * ms, 0, 0},
		// M/D/1 at a load of 0.5: the wait is within 15 ms with
		// probability (1-ρ)·(e^{λt} - λ(t-D)·e^{λ(t-D)}) = 0.898
		// (λ = 50/s, t = 15 ms, D = 10 ms).
		{"M/D/1 at half load", tenMs, 50, 25 * ms, 0.898, 0.015},
		// At a tenth of the load almost nothing waits past 15 ms.
		{"M/D/1 at a tenth", tenMs, 10, 25 * ms, 0.99, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Forecast(tt.service, tt.rate, tt.bound)
			if math.Abs(got-tt.want) > tt.tol {
				t.Errorf("Forecast = %.4f, want %.3f ± %.3f", got, tt.want, tt.tol)
			}
			if again := Forecast(tt.service, tt.rate, tt.bound); again != got {
				t.Errorf("Forecast is not deterministic: %.4f then %.4f", got, again)
			}
		})
	}
	if lo, hi := Forecast(tenMs, 20, 25*ms), Forecast(tenMs, 60, 25*ms); hi >= lo {
		t.Errorf("Forecast at 60/s %.4f, not below its %.4f at 20/s", hi, lo)
	}
}

// BenchmarkForecast is one forecast of 512 service times (a rung's
// most), as the controller makes a few of at a step.
func BenchmarkForecast(b *testing.B) {
	sv := make([]time.Duration, ServiceTimesKept)
	for i := range sv {
		sv[i] = time.Duration(8+i%5) * ms
	}
	for b.Loop() {
		Forecast(sv, 30, 25*ms)
	}
}
