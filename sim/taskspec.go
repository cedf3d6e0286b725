package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// TaskSpec is a task as the command line names it:
// NAME:TRACE:PRIORITY[:OPTION...], where OPTION is think=DURATION (closed
// loop), rate=R (Poisson, requests/s), b2b (back to back, the default),
// mps=PERCENT, mpsprio=0|1 (MPS client priority: normal or below),
// scale=FACTOR (host time; default calibrated), online or offline
// (default: online at priority 0).
type TaskSpec struct {
	Name, Trace string
	Task        Task
}

// ParseTaskSpec parses one --task value. Errors name the part at fault.
func ParseTaskSpec(v string) (TaskSpec, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 3 {
		return TaskSpec{}, fmt.Errorf("task %q: want NAME:TRACE:PRIORITY[:think=2ms|rate=R|b2b][:mps=P][:mpsprio=0|1][:scale=F][:online|offline]", v)
	}
	name, tr := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
	if name == "" {
		return TaskSpec{}, fmt.Errorf("task %q: NAME is empty", v)
	}
	if tr == "" {
		return TaskSpec{}, fmt.Errorf("task %q: TRACE is empty", v)
	}
	prio, err := strconv.Atoi(strings.TrimSpace(parts[2]))
	if err != nil || prio < 0 || prio >= kernelsched.NumPriorities {
		return TaskSpec{}, fmt.Errorf("task %q: PRIORITY %q is not an integer 0..%d", v, parts[2], kernelsched.NumPriorities-1)
	}
	st := Task{Name: name, Priority: prio, Arrival: BackToBack, Online: prio == 0}
	arrivals := 0
	for _, opt := range parts[3:] {
		key, val, hasVal := strings.Cut(strings.TrimSpace(opt), "=")
		bad := func(why string) error { return fmt.Errorf("task %q: option %q: %s", v, opt, why) }
		switch key {
		case "think":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 || d > time.Hour {
				return TaskSpec{}, bad("want a duration 0..1h like 2ms")
			}
			st.Arrival, st.Think = Closed, d
			arrivals++
		case "rate":
			r, err := strconv.ParseFloat(val, 64)
			if err != nil || !(r > 0 && r <= 1e6) {
				return TaskSpec{}, bad("want requests per second in (0, 1e6]")
			}
			st.Arrival, st.Rate = Poisson, r
			arrivals++
		case "b2b":
			if hasVal {
				return TaskSpec{}, bad("takes no value")
			}
			st.Arrival = BackToBack
			arrivals++
		case "mps":
			p, err := strconv.Atoi(val)
			if err != nil || p < 1 || p > 100 {
				return TaskSpec{}, bad("want a percentage 1..100")
			}
			st.MPSPercent = p
		case "mpsprio":
			if val != "0" && val != "1" {
				return TaskSpec{}, bad("want 0 (normal) or 1 (below normal)")
			}
			st.MPSPriority = int(val[0] - '0')
		case "scale":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || !(f > 0 && f <= 100) {
				return TaskSpec{}, bad("want a factor in (0, 100]")
			}
			st.HostScale = f
		case "online", "offline":
			if hasVal {
				return TaskSpec{}, bad("takes no value")
			}
			st.Online = key == "online"
		default:
			return TaskSpec{}, bad("unknown; want think=, rate=, b2b, mps=, mpsprio=, scale=, online or offline")
		}
	}
	if arrivals > 1 {
		return TaskSpec{}, fmt.Errorf("task %q: give at most one of think=, rate= and b2b", v)
	}
	return TaskSpec{Name: name, Trace: tr, Task: st}, nil
}
