package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mmkgpu/mmk/node/tpcprobe"
	"github.com/mmkgpu/mmk/slo"
)

// TPCMapper maps a GPU's TPC mask slots (node/tpcprobe.Mapper):
// Cached is a map kept from an earlier start on this GPU and driver, Map
// takes one by probing the GPU, telling progress as it goes.
type TPCMapper interface {
	Cached(uuid string) (tpcprobe.Mapped, bool)
	Map(ctx context.Context, uuid string, progress func(done, total int)) (tpcprobe.Mapped, error)
}

// The states of a GPU's masks (MaskView.State).
const (
	// MasksMapping: the GPU's TPC slots are being mapped; jobs wait.
	MasksMapping = "mapping"
	// MasksOn: its map was taken and a mask checked: its controller
	// climbs the mask ladder.
	MasksOn = "on"
	// MasksOff: it uses slo.ladder as configured; Why says why.
	MasksOff = "off"
)

// MaskView is what mmkd knows of one GPU's TPC masks (SLOView.Masks).
type MaskView struct {
	// GPU is the GPU as mmk names it ("gpu0"), UUID NVML's.
	GPU  string `json:"gpu"`
	UUID string `json:"uuid"`
	// State is mapping, on or off; Why says it in words.
	State string `json:"state"`
	Why   string `json:"why"`
	// Ladder is the ladder its instances' controllers climb.
	Ladder []string `json:"ladder"`
	// ProbesDone of Probes while mapping.
	Probes     int `json:"probes,omitempty"`
	ProbesDone int `json:"probesDone,omitempty"`
	// TPCs and Holes are the map's slots (on); Cached says the map was
	// kept from an earlier start; TookS how long mapping took.
	TPCs   int     `json:"tpcs,omitempty"`
	Holes  int     `json:"holes,omitempty"`
	Cached bool    `json:"cached,omitempty"`
	TookS  float64 `json:"tookS,omitempty"`
	// At is when State was last set.
	At time.Time `json:"at"`
}

// masks is every GPU's MaskView, by UUID, and the maps taken; ctx and
// wg are Run's, for GPUs that appear later (maskNew).
type masks struct {
	mu    sync.Mutex
	views map[string]*MaskView
	maps  map[string]*slo.TPCMap
	ctx   context.Context
	wg    *sync.WaitGroup
}

// maskView is a copy of the GPU's view (ok false: none, as where the
// controller is off).
func (n *Node) maskView(uuid string) (MaskView, bool) {
	n.masks.mu.Lock()
	defer n.masks.mu.Unlock()
	v, ok := n.masks.views[uuid]
	if !ok {
		return MaskView{}, false
	}
	return *v, true
}

// MaskViews are the GPUs' views, in the order of their index.
func (n *Node) maskViews() []MaskView {
	n.masks.mu.Lock()
	defer n.masks.mu.Unlock()
	out := make([]MaskView, 0, len(n.masks.views))
	for _, v := range n.masks.views {
		out = append(out, *v)
	}
	sortMaskViews(out)
	return out
}

// sortMaskViews orders views by GPU index ("gpu2" before "gpu10").
func sortMaskViews(v []MaskView) {
	idx := func(m MaskView) int { i, _ := strconv.Atoi(strings.TrimPrefix(m.GPU, "gpu")); return i }
	slices.SortFunc(v, func(a, b MaskView) int { return cmp.Compare(idx(a), idx(b)) })
}

// mapping reports a GPU whose map is being taken and how far ("": none).
func (n *Node) mapping() string {
	var parts []string
	for _, v := range n.maskViews() {
		if v.State == MasksMapping {
			parts = append(parts, fmt.Sprintf("%s's (%d of %d probes)", v.GPU, v.ProbesDone, v.Probes))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "mmkd is mapping the TPC mask slots of " + strings.Join(parts, ", ") +
		" for the latency controller's masks (once per GPU and driver; slo.masks turns it off)"
}

// baseLadder is slo.ladder as configured (the default where none is).
func (n *Node) baseLadder() slo.Ladder {
	if n.cfg.SLO == nil {
		return nil
	}
	if l := n.cfg.SLO.Controller.Ladder; len(l) > 0 {
		return l
	}
	return slo.DefaultLadder()
}

// ladderOf is the ladder of the controllers of GPU g: that of a kernel
// scheduler of g already serving (a controller keeps the ladder it
// started with: one that serves jobs adopted before g's map was taken
// climbs slo.ladder until it stops), else slo.mask_ladder where g's masks
// are on, else slo.ladder. Masks are on only where startMasks found
// slo.ladder without masks of its own, slo.mask_ladder set and MIG off.
func (n *Node) ladderOf(g gpuInfo) slo.Ladder {
	n.mu.RLock()
	for _, k := range g.keys {
		if s := n.scheds[k]; s != nil && s.ladder != nil {
			n.mu.RUnlock()
			return s.ladder
		}
	}
	n.mu.RUnlock()
	if v, ok := n.maskView(g.state.UUID); ok && v.State == MasksOn {
		return n.cfg.SLO.MaskLadder
	}
	return n.baseLadder()
}

// maskNew decides the masks of GPUs that appeared since the start
// (startMasks), from the loop.
func (n *Node) maskNew(gpus []gpuInfo) {
	n.masks.mu.Lock()
	ctx, wg := n.masks.ctx, n.masks.wg
	n.masks.mu.Unlock()
	if ctx != nil {
		n.startMasks(ctx, wg, gpus)
	}
}

// startMasks decides the masks of each GPU it has no view of yet: off
// where the controller, the GPU or the configuration rules them out, on
// from a map kept or given (slo.tpc_maps), else mapping, each GPU in its
// own goroutine (of wg) until ctx ends; the loop decides again once each
// ends.
func (n *Node) startMasks(ctx context.Context, wg *sync.WaitGroup, gpus []gpuInfo) {
	c := n.cfg.SLO
	if c == nil || c.Off {
		return
	}
	n.masks.mu.Lock()
	if n.masks.views == nil {
		n.masks.views, n.masks.maps = map[string]*MaskView{}, map[string]*slo.TPCMap{}
	}
	n.masks.ctx, n.masks.wg = ctx, wg
	known := make(map[string]bool, len(n.masks.views))
	for uuid := range n.masks.views {
		known[uuid] = true
	}
	n.masks.mu.Unlock()
	for _, g := range gpus {
		if g.skip != "" || known[g.state.UUID] {
			continue
		}
		v := &MaskView{GPU: "gpu" + strconv.Itoa(g.state.Index), UUID: g.state.UUID, State: MasksOff, At: n.cfg.Now()}
		var probe bool
		switch {
		case n.baseLadder().UsesTPCs():
			v.Why = "slo.ladder names its own mask rungs"
		case len(c.MaskLadder) == 0:
			v.Why = "slo.mask_ladder is empty"
		case g.mig:
			v.Why = "MIG is on: a MIG instance numbers its TPC slots its own way, which mmk does not map"
		case c.TPCMaps[g.state.UUID] != nil:
			v.State, v.Why = MasksOn, "the map of slo.tpc_maps"
			n.setMap(g.state.UUID, c.TPCMaps[g.state.UUID])
			n.describe(v, c.TPCMaps[g.state.UUID])
		case c.Mapper == nil:
			v.Why = c.NoMasks
		default:
			if got, ok := c.Mapper.Cached(g.state.UUID); ok {
				n.mapped(v, got, nil)
			} else {
				v.State, v.Why, probe = MasksMapping, "taking the GPU's map (first start on this GPU and driver)", true
			}
		}
		if v.State != MasksOn {
			v.Ladder = n.baseLadder().Strings()
		}
		n.masks.mu.Lock()
		n.masks.views[g.state.UUID] = v
		n.masks.mu.Unlock()
		n.logMasks(*v)
		if probe {
			uuid := g.state.UUID
			wg.Go(func() {
				got, err := c.Mapper.Map(ctx, uuid, func(done, total int) {
					n.masks.mu.Lock()
					if v := n.masks.views[uuid]; v != nil {
						v.ProbesDone, v.Probes = done, total
					}
					n.masks.mu.Unlock()
				})
				if ctx.Err() != nil {
					// Stopped with the loop: a later Run maps it again.
					n.masks.mu.Lock()
					delete(n.masks.views, uuid)
					n.masks.mu.Unlock()
					return
				}
				n.masks.mu.Lock()
				cur := *n.masks.views[uuid]
				n.masks.mu.Unlock()
				n.mapped(&cur, got, err)
				n.masks.mu.Lock()
				n.masks.views[uuid] = &cur
				n.masks.mu.Unlock()
				n.logMasks(cur)
				// Jobs waited for the map: the loop decides again.
				_ = n.onLoop(ctx, func() { n.causes = append(n.causes, "tpc map") })
			})
		}
	}
}

// mapped sets v from a map taken (or kept) or the error that stopped it.
func (n *Node) mapped(v *MaskView, got tpcprobe.Mapped, err error) {
	v.At, v.Probes, v.ProbesDone = n.cfg.Now(), 0, 0
	if err != nil {
		v.State, v.Why, v.Ladder = MasksOff, "mapping failed: "+err.Error(), n.baseLadder().Strings()
		return
	}
	n.setMap(v.UUID, got.Map)
	v.State, v.Cached, v.TookS = MasksOn, got.Cached, got.Took.Seconds()
	n.describe(v, got.Map)
	how := "mapped"
	if got.Cached {
		how = "kept from an earlier start on this GPU and driver"
	}
	v.Why = fmt.Sprintf("%s: %d TPCs of %d slots (%d holes); a mask keeping %d slots left %d of its %d TPCs, as the map says", how,
		len(got.Map.TPCs), got.Map.Slots, len(got.Map.Holes), got.CheckSlots, got.Kept, got.TPCs)
	if got.KeepErr != nil {
		v.Why += "; not kept for the next start: " + got.KeepErr.Error()
	}
}

// describe fills v's map numbers and the mask ladder.
func (n *Node) describe(v *MaskView, m *slo.TPCMap) {
	v.TPCs, v.Holes, v.Ladder = len(m.TPCs), len(m.Holes), n.cfg.SLO.MaskLadder.Strings()
}

// setMap keeps a GPU's map for its kernel schedulers.
func (n *Node) setMap(uuid string, m *slo.TPCMap) {
	n.masks.mu.Lock()
	defer n.masks.mu.Unlock()
	n.masks.maps[uuid] = m
}

// takenMap is the map taken or given for a GPU (nil: none).
func (n *Node) takenMap(uuid string) *slo.TPCMap {
	n.masks.mu.Lock()
	defer n.masks.mu.Unlock()
	return n.masks.maps[uuid]
}

// logMasks says a GPU's masks in mmkd's log.
func (n *Node) logMasks(v MaskView) {
	n.cfg.Log.Info("slo: TPC masks", "gpu", v.GPU, "uuid", v.UUID, "state", v.State, "why", v.Why, "ladder", strings.Join(v.Ladder, ","), "tookS", v.TookS)
}
