package sim

import (
	"testing"
	"time"
)

// BenchmarkSimulate measures the simulator's speed in kernel events (launch
// calls and completions) per second of wall time.
func BenchmarkSimulate(b *testing.B) {
	for _, policy := range []string{"fifo", "fikit", "mmk"} {
		b.Run(policy, func(b *testing.B) {
			tasks := pairTasks(b, "resnet50_infer_bs1", "vgg19_train_bs32")
			tasks[0].HostScale = 0.52
			events := 0
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				res, err := Simulate(Config{Policy: policy, Duration: 2 * time.Second, GPU: DefaultGPU(), Tasks: tasks})
				if err != nil {
					b.Fatal(err)
				}
				events += res.Events
			}
			b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
		})
	}
}
