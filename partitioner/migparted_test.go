package partitioner

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func readParted(t *testing.T, name string) (*PartedSpec, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "migparted", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseParted(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s, data
}

// withoutLines drops what only says where a value stood in a file.
func withoutLines(s *PartedSpec) *PartedSpec {
	c := *s
	c.Configs = append([]PartedConfig(nil), s.Configs...)
	for i := range c.Configs {
		c.Configs[i].Line = 0
		c.Configs[i].Entries = append([]PartedEntry(nil), c.Configs[i].Entries...)
		for j := range c.Configs[i].Entries {
			c.Configs[i].Entries[j].Line = 0
		}
	}
	return &c
}

// TestPartedRoundTrip: mig-parted configuration files (written from its
// documented format) read and written back hold the same data, field for
// field, and read again to the same spec.
func TestPartedRoundTrip(t *testing.T) {
	for _, name := range []string{"a100-40gb.yaml", "filters.yaml", "h200.json"} {
		t.Run(name, func(t *testing.T) {
			s, data := readParted(t, name)
			out, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			var before, after any
			if err := yaml.Unmarshal(data, &before); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(out, &after); err != nil {
				t.Fatalf("written file does not read: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("written back differs:\nread:  %v\nwrote: %v\n%s", before, after, out)
			}
			again, err := ParseParted(out)
			if err != nil {
				t.Fatalf("written file does not parse: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(withoutLines(s), withoutLines(again)) {
				t.Errorf("spec read back differs:\n%+v\n%+v", s, again)
			}
		})
	}
}

// TestPartedWrittenForm: what mmk writes looks like mig-parted's own
// files (profiles and filters quoted, device lists in flow style).
func TestPartedWrittenForm(t *testing.T) {
	s, _ := readParted(t, "filters.yaml")
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version: v1\nmig-configs:\n  hopper-balanced:\n    - device-filter: [\"0x233010DE\", \"0x233110DE\"]\n      devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 2\n",
		"    - device-filter: \"0x1FB010DE\"\n      devices: all\n      mig-enabled: false\n      mig-devices: {}\n",
		"      devices: [0, 1]\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("written file lacks\n%s\ngot:\n%s", want, out)
		}
	}
}

// TestPartedErrors: every mistake is an error that names its line and
// what is wrong.
func TestPartedErrors(t *testing.T) {
	head := "version: v1\nmig-configs:\n  c:\n"
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "the file is empty"},
		{"not YAML", "version: [", "mig-parted config: yaml"},
		{"no version", "mig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n", "line 1: the file has no version"},
		{"other version", "version: v2\n", `line 1: version "v2"`},
		{"unknown top field", "version: v1\nmig-config:\n  c: []\n", `line 2: unknown field "mig-config" in the file (known: version, mig-configs)`},
		{"no configs", "version: v1\n", "line 1: the file has no mig-configs"},
		{"empty configs", "version: v1\nmig-configs: {}\n", "line 2: mig-configs must hold at least one configuration"},
		{"configs a list", "version: v1\nmig-configs: [a]\n", "line 2: mig-configs must be a mapping"},
		{"empty config", "version: v1\nmig-configs:\n  c: []\n", `line 3: MIG configuration "c" must be a list of at least one entry`},
		{"unknown entry field", head + "    - devices: all\n      mig-enabled: false\n      mig_devices: {}\n", `line 6: unknown field "mig_devices" in an entry of "c"`},
		{"repeated field", head + "    - devices: all\n      devices: [0]\n      mig-enabled: false\n", `line 5: field "devices" of an entry of "c" is given twice (first on line 4)`},
		{"repeated config", "version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n  c:\n    - devices: all\n      mig-enabled: false\n", `line 6: field "c" of mig-configs is given twice (first on line 3)`},
		{"no devices", head + "    - mig-enabled: false\n", `line 4: an entry of "c" has no devices`},
		{"no mig-enabled", head + "    - devices: all\n", `line 4: an entry of "c" has no mig-enabled`},
		{"enabled without devices", head + "    - devices: all\n      mig-enabled: true\n", "enables MIG but has no mig-devices"},
		{"disabled with devices", head + "    - devices: all\n      mig-enabled: false\n      mig-devices:\n        \"1g.10gb\": 1\n", "lists mig-devices but has mig-enabled: false"},
		{"devices word", head + "    - devices: some\n      mig-enabled: false\n", `line 4: devices "some": want all or a list`},
		{"negative index", head + "    - devices: [0, -1]\n      mig-enabled: false\n", `line 4: devices: "-1" is not a GPU index`},
		{"string index", head + "    - devices: [\"0\"]\n      mig-enabled: false\n", `line 4: devices: "0" is not a GPU index`},
		{"repeated index", head + "    - devices: [1, 1]\n      mig-enabled: false\n", "line 4: devices: GPU 1 is listed twice"},
		{"enabled not bool", head + "    - devices: all\n      mig-enabled: yes please\n", `line 5: mig-enabled must be true or false (got "yes please")`},
		{"bad profile", head + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g\": 1\n", `line 7: mig-devices: "3g" is not a MIG profile`},
		{"bad count", head + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": two\n", `line 7: mig-devices: the count of 3g.40gb is "two"`},
		{"negative count", head + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": -1\n", "the count of 3g.40gb is \"-1\""},
		{"bad filter", head + "    - device-filter: H100\n      devices: all\n      mig-enabled: false\n", `line 4: device-filter "H100" is not a PCI device id`},
		{"bad filter in list", head + "    - device-filter: [\"0x233010DE\", 7]\n      devices: all\n      mig-enabled: false\n", `line 4: device-filter "7"`},
		{"entry not a mapping", head + "    - all\n", `line 4: an entry of "c" must be a mapping`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseParted([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPartedAliases: anchors and aliases read as their values; a file
// that would expand without end is refused.
func TestPartedAliases(t *testing.T) {
	text := "version: v1\nmig-configs:\n  a: &e\n    - devices: all\n      mig-enabled: false\n  b: *e\n"
	s, err := ParseParted([]byte(text))
	if err != nil || len(s.Configs) != 2 || s.Configs[1].Entries[0].MIGEnabled {
		t.Fatalf("aliases: %+v %v", s, err)
	}
	bomb := "version: v1\nmig-configs:\n  a: &a [{devices: all, mig-enabled: false}]\n"
	prev := "a"
	for i := range 12 {
		name := string(rune('b' + i))
		bomb += "  " + name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = name
	}
	if _, err := ParseParted([]byte(bomb)); err == nil {
		t.Error("an alias bomb was read")
	}
}

// TestPartedLayouts: entries resolve to layouts of the GPU they apply to:
// by index, by device filter (the model of a PCI id), whole compute
// instances only, and two entries for one GPU are an error.
func TestPartedLayouts(t *testing.T) {
	a100, _ := LookupModel("A100-40GB")
	a100x80, _ := LookupModel("A100-80GB")
	h100, _ := LookupModel("H100-80GB")
	h200, _ := LookupModel("H200-141GB")
	s40, _ := readParted(t, "a100-40gb.yaml")
	sf, _ := readParted(t, "filters.yaml")
	tests := []struct {
		spec   *PartedSpec
		config string
		gpu    int
		model  *Model
		mig    bool
		want   string // the layout's profiles; "-" when no entry applies
	}{
		{s40, "off", 3, a100, false, ""},
		{s40, "on-empty", 0, a100, true, ""},
		{s40, "sevens", 5, a100, true, strings.Repeat("1g.5gb+", 6) + "1g.5gb"},
		{s40, "mixed", 0, a100, true, "1g.5gb+1g.5gb+2g.10gb+3g.20gb"},
		{s40, "per-gpu", 1, a100, false, ""},
		{s40, "per-gpu", 5, a100, true, "2g.10gb+2g.10gb+2g.10gb"},
		{s40, "per-gpu", 6, a100, true, "3g.20gb+4g.20gb"},
		{s40, "per-gpu", 7, a100, true, "1g.5gb+1g.5gb+1g.5gb+me+2g.10gb"},
		{s40, "per-gpu", 8, a100, false, "-"},
		{sf, "hopper-balanced", 2, h100, true, "1g.10gb+1g.10gb+2g.20gb+3g.40gb"},
		{sf, "hopper-balanced", 0, h200, true, "1g.18gb+1g.18gb+2g.35gb+3g.71gb"},
		{sf, "hopper-balanced", 0, a100x80, false, "-"},
		{sf, "station", 1, a100x80, true, "3g.40gb+3g.40gb"},
		{sf, "station", 2, a100x80, false, "-"},
		{sf, "inference", 0, h100, true, "1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+1g.10gb+me"},
	}
	for _, tc := range tests {
		c, err := tc.spec.Config(tc.config)
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.For(tc.gpu, tc.model.Key)
		if err != nil {
			t.Fatalf("%s GPU %d: %v", tc.config, tc.gpu, err)
		}
		if e == nil {
			if tc.want != "-" {
				t.Errorf("%s GPU %d (%s): no entry applies", tc.config, tc.gpu, tc.model.Key)
			}
			continue
		}
		l, err := e.Layout(tc.model)
		if err != nil {
			t.Errorf("%s GPU %d: %v", tc.config, tc.gpu, err)
			continue
		}
		if tc.want == "-" || e.MIGEnabled != tc.mig || l.Profiles() != tc.want {
			t.Errorf("%s GPU %d (%s): MIG %v %q, want %v %q", tc.config, tc.gpu, tc.model.Key, e.MIGEnabled, l.Profiles(), tc.mig, tc.want)
		}
	}
}

func TestPartedLayoutErrors(t *testing.T) {
	h100, _ := LookupModel("H100-80GB")
	tests := []struct{ text, want string }{
		{"\"1c.3g.40gb\": 2", "profile 1c.3g.40gb: mmk makes one compute instance spanning each GPU instance (write 3g.40gb)"},
		{"\"1g.5gb\": 1", `entry on line 4: no profile "1g.5gb" on H100-80GB`},
		{"\"3g.40gb\": 3", "entry on line 4"},
		{"\"1g.10gb\": 8", "8 GPU instances, but at most 7"},
	}
	for _, tc := range tests {
		s, err := ParseParted([]byte("version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        " + tc.text + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Configs[0].Entries[0].Layout(h100)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.text, err, tc.want)
		}
	}
	s, err := ParseParted([]byte("version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n    - devices: [2]\n      mig-enabled: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Configs[0].For(2, "H100-80GB"); err == nil || !strings.Contains(err.Error(), "lines 4 and 6 both apply to GPU 2") {
		t.Errorf("two entries for GPU 2: %v", err)
	}
	if _, err := s.Select(""); err != nil {
		t.Errorf("select the only configuration: %v", err)
	}
	if _, err := s.Select("d"); err == nil || !strings.Contains(err.Error(), `no MIG configuration "d" (the file has: c)`) {
		t.Errorf("select an unknown configuration: %v", err)
	}
}

// TestPartedConfigOf: GPUs' layouts exported as a configuration read back
// to the same MIG modes and instances; GPUs alike share an entry.
func TestPartedConfigOf(t *testing.T) {
	h100, _ := LookupModel("H100-80GB")
	lay := func(text string) Layout {
		l, err := ParseLayout(h100, text)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	gpus := []GPULayout{
		{Index: 0, MIG: true, Layout: lay("4g.40gb@0+2g.20gb@4+1g.10gb@6")},
		{Index: 1, MIG: true, Layout: lay("3g.40gb@0+3g.40gb@4")},
		{Index: 2, MIG: false},
		{Index: 3, MIG: true, Layout: lay("1g.10gb@6+2g.20gb@4+4g.40gb@0")},
		{Index: 4, MIG: true, Layout: lay("")},
	}
	c := PartedConfigOf("now", gpus)
	if len(c.Entries) != 4 || !reflect.DeepEqual(c.Entries[0].Devices, []int{0, 3}) {
		t.Errorf("entries %+v: want GPUs 0 and 3 together", c.Entries)
	}
	if got := c.Entries[0].MIGDevices; !reflect.DeepEqual(got, []ProfileCount{{"4g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 1}}) {
		t.Errorf("mig-devices %v: want the largest profile first", got)
	}
	out, err := (&PartedSpec{Configs: []PartedConfig{c}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseParted(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, g := range gpus {
		e, err := s.Configs[0].For(g.Index, h100.Key)
		if err != nil || e == nil {
			t.Fatalf("GPU %d: %v %v", g.Index, e, err)
		}
		l, err := e.Layout(h100)
		if err != nil {
			t.Fatal(err)
		}
		if e.MIGEnabled != g.MIG || l.Profiles() != g.Layout.Profiles() {
			t.Errorf("GPU %d: read back MIG %v %q, exported %v %q", g.Index, e.MIGEnabled, l.Profiles(), g.MIG, g.Layout.Profiles())
		}
	}
	same := PartedConfigOf("same", []GPULayout{gpus[1], {Index: 1, MIG: true, Layout: lay("3g.40gb+3g.40gb")}})
	if len(same.Entries) != 1 || !same.Entries[0].AllDevices {
		t.Errorf("GPUs alike: %+v, want one entry for all devices", same.Entries)
	}
}

// FuzzParseParted: no input makes the reader panic, and what it reads
// writes back to a file that reads to the same spec.
func FuzzParseParted(f *testing.F) {
	for _, name := range []string{"a100-40gb.yaml", "filters.yaml", "h200.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "migparted", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("version: v1\nmig-configs:\n  c: &a\n    - devices: [0]\n      mig-enabled: false\n  d: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseParted(data)
		if err != nil {
			return
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("read but not written: %v", err)
		}
		again, err := ParseParted(out)
		if err != nil {
			t.Fatalf("written file does not read: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(withoutLines(s), withoutLines(again)) {
			t.Fatalf("read back differs:\n%+v\n%+v", s, again)
		}
	})
}
