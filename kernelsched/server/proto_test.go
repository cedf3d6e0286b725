package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLayoutMatchesC compiles hook/lib/proto.h and compares every size and
// offset the Go side relies on.
func TestLayoutMatchesC(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "layout.c")
	prog := `#include <stddef.h>
#include <stdio.h>
#include "proto.h"
#define P(x) printf("%s %zu\n", #x, (size_t)(x))
int main(void) {
P(sizeof(struct mmk_hello)); P(sizeof(struct mmk_welcome)); P(sizeof(struct mmk_name_msg));
P(offsetof(struct mmk_slot, granted)); P(offsetof(struct mmk_slot, free)); P(offsetof(struct mmk_slot, server_sleeping));
P(offsetof(struct mmk_slot, head)); P(offsetof(struct mmk_slot, fail_open)); P(offsetof(struct mmk_slot, observe_every));
P(offsetof(struct mmk_slot, quiet)); P(offsetof(struct mmk_slot, quiet_ack)); P(offsetof(struct mmk_slot, tail));
P(offsetof(struct mmk_slot, ring)); P(sizeof(struct mmk_entry)); P(sizeof(struct mmk_slot));
P(offsetof(struct mmk_entry, ready)); P(offsetof(struct mmk_entry, name_id)); P(offsetof(struct mmk_entry, seq));
P(offsetof(struct mmk_entry, t_ns)); P(offsetof(struct mmk_entry, grid)); P(offsetof(struct mmk_entry, block));
P(offsetof(struct mmk_entry, shared_mem)); P(offsetof(struct mmk_entry, api));
P(MMK_PROTO_MAGIC); P(MMK_PROTO_VERSION); P(MMK_RING); P(MMK_ENTRY_WENT);
P(MMK_ENTRY_SYNC_ENTER); P(MMK_ENTRY_SYNC_EXIT); P(MMK_ENTRY_DONE);
P(offsetof(struct mmk_slot, tpc_keep)); P(offsetof(struct mmk_slot, tpc_state));
P(MMK_ENTRY_MARK); P(MMK_ENTRY_REQUEST); P(MMK_QUIET); P(MMK_QUIET_MARK); P(MMK_QUIET_COUNT); P(MMK_TPC_MASKING); P(MMK_TPC_NONE);
return 0; }
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	inc := filepath.Join(repoRoot(t), "hook", "lib")
	if out, err := exec.Command("cc", "-std=c11", "-I", inc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		got[line[:max(i, 0)]] = line[i+1:]
	}
	want := map[string]int{
		"sizeof(struct mmk_hello)": helloSize, "sizeof(struct mmk_welcome)": welcomeSize, "sizeof(struct mmk_name_msg)": nameMsgSize,
		"offsetof(struct mmk_slot, granted)": offGranted, "offsetof(struct mmk_slot, free)": offFree,
		"offsetof(struct mmk_slot, server_sleeping)": offServerSleeping, "offsetof(struct mmk_slot, head)": offHead,
		"offsetof(struct mmk_slot, fail_open)": offFailOpen, "offsetof(struct mmk_slot, observe_every)": offObserveEvery,
		"offsetof(struct mmk_slot, quiet)": offQuiet, "offsetof(struct mmk_slot, quiet_ack)": offQuietAck,
		"offsetof(struct mmk_slot, tpc_keep)": offTPCKeep, "offsetof(struct mmk_slot, tpc_state)": offTPCState,
		"offsetof(struct mmk_slot, tail)": offTail,
		"offsetof(struct mmk_slot, ring)": offRing, "sizeof(struct mmk_entry)": entrySize, "sizeof(struct mmk_slot)": slotBytes,
		"offsetof(struct mmk_entry, ready)": entReady, "offsetof(struct mmk_entry, name_id)": entNameID,
		"offsetof(struct mmk_entry, seq)": entSeq, "offsetof(struct mmk_entry, t_ns)": entTime,
		"offsetof(struct mmk_entry, grid)": entGrid, "offsetof(struct mmk_entry, block)": entBlock,
		"offsetof(struct mmk_entry, shared_mem)": entSharedMem, "offsetof(struct mmk_entry, api)": entAPI,
		"MMK_PROTO_MAGIC": ProtoMagic, "MMK_PROTO_VERSION": ProtoVersion, "MMK_RING": Ring, "MMK_ENTRY_WENT": entryWent,
		"MMK_ENTRY_SYNC_ENTER": entrySyncEnter, "MMK_ENTRY_SYNC_EXIT": entrySyncExit, "MMK_ENTRY_DONE": entryDone,
		"MMK_ENTRY_MARK": entryMark, "MMK_ENTRY_REQUEST": entryRequest, "MMK_QUIET": quietBit, "MMK_QUIET_MARK": quietMark,
		"MMK_QUIET_COUNT": quietCount, "MMK_TPC_MASKING": TPCMasking, "MMK_TPC_NONE": TPCNone,
	}
	for k, v := range want {
		if got[k] != itoa(v) {
			t.Errorf("%s: C says %s, Go %d", k, got[k], v)
		}
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// FuzzParseHello: any bytes give a hello or an error, never a panic, and
// a parsed hello's strings hold no NUL.
func FuzzParseHello(f *testing.F) {
	good := make([]byte, helloSize)
	copy(good, welcome(0)[:4])
	good[4], good[6] = ProtoVersion, helloSize
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHello(b)
		if err == nil && (strings.ContainsRune(h.TaskKey, 0) || strings.ContainsRune(h.Name, 0)) {
			t.Errorf("hello strings hold NUL: %+v", h)
		}
	})
}
