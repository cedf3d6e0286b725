package slo

import (
	"testing"
	"time"
)

// BenchmarkObserveSuspended: a service's requests told to a controller
// that suspends the offline jobs, its tracker full (Keep requests). A
// backlog's requests, which arrived before the suspension settled, are
// not measured alone and must not cost a scan of the requests kept each
// (judgedFrom); those that arrived after it are.
func BenchmarkObserveSuspended(b *testing.B) {
	for _, tc := range []struct {
		name    string
		arrived time.Duration // of the requests told, after the change
	}{
		{"backlog", 100 * time.Millisecond},
		{"after", 2 * time.Second},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ladder, err := ParseLadder([]string{"suspend"})
			if err != nil {
				b.Fatal(err)
			}
			c, err := New(Config{Ladder: ladder})
			if err != nil {
				b.Fatal(err)
			}
			c.AddService("svc", MustParse("p99=25ms"))
			c.Step(0)
			for i := range Keep {
				at := time.Duration(i) * 10 * time.Microsecond
				c.Observe("svc", Sample{At: at + time.Millisecond, Latency: time.Millisecond, Source: Reported}, false)
			}
			b.ResetTimer()
			for i := range b.N {
				at := tc.arrived + time.Duration(i%1000)*time.Microsecond
				c.Observe("svc", Sample{At: at + 5*time.Millisecond, Latency: 5 * time.Millisecond, Source: Reported}, false)
			}
		})
	}
}
