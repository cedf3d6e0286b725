package partitioner

import "testing"

// healthOnly is a backend of two GPUs that reads health and not usage.
type healthOnly struct{ Backend }

func (healthOnly) GPUs() ([]GPU, error) {
	return []GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}, nil
}

func (healthOnly) Health() ([]GPUHealth, error) {
	return []GPUHealth{{GPU: 0, UUID: "GPU-a"}, {GPU: 1, UUID: "GPU-b"}}, nil
}

// TestDevicesKeepHealth: a backend that reads health but not usage keeps
// its health when restricted to some GPUs, and reads only theirs (before,
// the restricted backend lost the reader).
func TestDevicesKeepHealth(t *testing.T) {
	b, err := Devices(healthOnly{}, []string{"1"})
	if err != nil {
		t.Fatal(err)
	}
	h, ok := b.(HealthReader)
	if !ok {
		t.Fatalf("%T reads no health", b)
	}
	hs, err := h.Health()
	if err != nil || len(hs) != 1 || hs[0].GPU != 1 {
		t.Errorf("Health() = %+v, %v; want GPU 1 alone", hs, err)
	}
}
