package slosuite

import (
	"cmp"
	"slices"

	"github.com/mmkgpu/mmk/slo"
)

// A request-scoped mask ("tpcs=0.5/req", issue 52's item 4) holds the
// trainers to a share of the TPCs only while some service has a request
// in flight: their speed is that of the mask throughout while a request
// runs and that of priority otherwise, so it falls as the services'
// load rises. The suite models it so: a setting's speed at a busy share
// b (the share of the time some service has a request in service) is
// priority's speed times 1-b plus the mask throughout's times b, both as
// calibrated beside the mix. On the H200 calibration of 2026-11-29
// (docs/results/calib-h200-2026-11-29-req) it gave the 24 mix, load and
// share cells' measured speed within a median 0.02 (at most 0.19, where
// the day's priority speed of resnet152 was 13 % off the other day's)
// (TestRequestMaskSpeedModel). A setting of another kind runs at its
// calibrated speed, whatever the load (Setting.Speed).

// SpeedAt is the trainers' speed under setting at busy share busy: a
// request-scoped mask's from priority's and the mask throughout's, any
// other setting's (or a request-scoped mask's where either is not
// calibrated beside the mix) its calibrated Speed.
func (m *Mix) SpeedAt(setting string, busy float64) float64 {
	s := m.Settings[setting]
	if s == nil {
		return 0
	}
	prio, mask, ok := m.maskParts(setting)
	if !ok {
		return s.Speed
	}
	busy = min(max(busy, 0), 1)
	return prio.Speed*(1-busy) + mask.Speed*busy
}

// maskParts are the settings a request-scoped mask's speed is made of
// (priority, the same mask throughout); ok is false for another setting
// or where either was not calibrated.
func (m *Mix) maskParts(setting string) (prio, mask *Setting, ok bool) {
	r, err := slo.ParseRung(setting)
	if err != nil || !r.PerRequest {
		return nil, nil, false
	}
	r.PerRequest = false
	prio, mask = m.Settings["priority"], m.Settings[r.String()]
	return prio, mask, prio != nil && mask != nil
}

// PerRequest reports whether setting's speed follows the load (a
// request-scoped mask modelled by SpeedAt).
func (m *Mix) PerRequest(setting string) bool {
	_, _, ok := m.maskParts(setting)
	return ok
}

// busy is the share of the window during which some service had a
// request in service (-1: the window does not say when its requests
// arrived).
func (w calibWindow) busy() float64 {
	length := w.M1 - w.M0
	if length <= 0 {
		return -1
	}
	var spans []span
	for _, s := range w.Services {
		if len(s.ArrivalS) != len(s.ServiceMs) {
			return -1
		}
		for i, a := range s.ArrivalS {
			end := a + s.LatencyMs[i]/1e3
			spans = append(spans, span{end - s.ServiceMs[i]/1e3, end})
		}
	}
	return covered(spans, 0, length)
}

// span is a stretch of time [from, to), in seconds.
type span struct{ from, to float64 }

// covered is the share of [from, to) that the union of spans covers
// (spans is sorted in place).
func covered(spans []span, from, to float64) float64 {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	total, lo, hi := 0.0, from, from
	for _, sp := range spans {
		sp.from, sp.to = max(sp.from, from), min(sp.to, to)
		switch {
		case sp.to <= sp.from:
			// Outside [from, to), or empty.
		case sp.from > hi:
			total += hi - lo
			lo, hi = sp.from, sp.to
		default:
			hi = max(hi, sp.to)
		}
	}
	total += hi - lo
	return min(total/(to-from), 1)
}
