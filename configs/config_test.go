package configs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mmk.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsLoad(t *testing.T) {
	c, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level != "info" || c.GPU.Backend != "auto" || c.Server.Listen != "127.0.0.1:7070" || len(c.GPU.Fake.GPUs) != 3 {
		t.Errorf("defaults: %+v", c)
	}
	if g := c.GPU.Fake.GPUs[0]; g.Model != "H100-80GB" || !g.MIG || g.Layout != "4g.40gb@0+2g.20gb@4+1g.10gb@6" {
		t.Errorf("first fake GPU: %+v", g)
	}
}

// TestPrecedence checks defaults < --config file < MMK_* < flags, one
// layer at a time, on the same key.
func TestPrecedence(t *testing.T) {
	file := writeFile(t, "log:\n  level: warn\ngpu:\n  backend: fake\n")
	flags := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags.String("log-level", "info", "")
	bind := map[string]*pflag.Flag{"log.level": flags.Lookup("log-level")}
	env := []string{"MMK_LOG_LEVEL=error", "PATH=/bin"}

	steps := []struct {
		name string
		opts Options
		set  bool
		want string
	}{
		{"defaults", Options{Flags: bind}, false, "info"},
		{"file over defaults", Options{File: file, Flags: bind}, false, "warn"},
		{"environment over file", Options{File: file, Environ: env, Flags: bind}, false, "error"},
		{"flag over environment", Options{File: file, Environ: env, Flags: bind}, true, "debug"},
	}
	for _, s := range steps {
		if s.set {
			if err := flags.Parse([]string{"--log-level", "debug"}); err != nil {
				t.Fatal(err)
			}
		}
		c, err := Load(s.opts)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if c.Log.Level != s.want {
			t.Errorf("%s: log.level = %q, want %q", s.name, c.Log.Level, s.want)
		}
		if s.opts.File != "" && c.GPU.Backend != "fake" {
			t.Errorf("%s: the file's other key was lost: gpu.backend = %q", s.name, c.GPU.Backend)
		}
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	tests := []struct {
		name, file string
		env        []string
		want       string
	}{
		{"unknown key", "gpu:\n  bakend: fake\n", nil, "unknown key gpu.bakend"},
		{"unknown section", "server:\n  listen: :1\ncolour: red\n", nil, "unknown key colour"},
		{"bad enum", "gpu:\n  backend: cuda\n", nil, `config key gpu.backend: "cuda" is not one of auto, nvml, fake`},
		{"bad log level", "log:\n  level: loud\n", nil, `config key log.level: "loud"`},
		{"bad listen", "server:\n  listen: localhost\n", nil, `config key server.listen: "localhost" is not host:port`},
		{"bad port", "server:\n  listen: localhost:99999\n", nil, "port 99999 is out of range"},
		{"bad type", "gpu:\n  fake:\n    seed: lots\n", nil, "config: 'gpu.fake.seed' cannot parse value as 'uint64'"},
		{"bad list item key", "gpu:\n  fake:\n    gpus:\n      - modle: H100-80GB\n", nil, "modle"},
		{"bad fake model", "gpu:\n  fake:\n    gpus:\n      - model: V100\n", nil, `config key gpu.fake.gpus[0].model: "V100" is not a known model`},
		{"bad fake layout", "gpu:\n  fake:\n    gpus:\n      - {model: A100-40GB, mig: true, layout: 3g.20gb@1}\n", nil, "config key gpu.fake.gpus[0].layout"},
		{"layout without MIG", "gpu:\n  fake:\n    gpus:\n      - {model: A100-40GB, layout: 7g.40gb}\n", nil, "needs mig: true"},
		{"scalar for a section", "log: 3\n", nil, "key log is a section, not a value"},
		{"not YAML", "gpu: [\n", nil, "config file"},
		{"bad environment value", "", []string{"MMK_GPU_BACKEND=gpu"}, `config key gpu.backend: "gpu"`},
		{"unknown environment key", "", []string{"MMK_GPU_BAKEND=fake"}, "environment variable MMK_GPU_BAKEND names no config key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Environ: tt.env}
			if tt.file != "" {
				opts.File = writeFile(t, tt.file)
			}
			_, err := Load(opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestJobVariablesAreNotConfig(t *testing.T) {
	if _, err := Load(Options{Environ: []string{"MMK_CHECKPOINT_DIR=/tmp/x", "MMK_RESTART_COUNT=2"}}); err != nil {
		t.Errorf("job environment rejected: %v", err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(Options{File: filepath.Join(t.TempDir(), "nope.yaml")})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestFieldErrorIsTyped(t *testing.T) {
	_, err := Load(Options{Environ: []string{"MMK_LOG_FORMAT=xml"}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "log.format" || fe.Value != "xml" {
		t.Errorf("error %v is not a FieldError for log.format", err)
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("gpu.nvml_library"); got != "MMK_GPU_NVML_LIBRARY" {
		t.Errorf("EnvName = %q", got)
	}
}

// TestTokenLength (issue 38, token hygiene): a configured server.token of
// fewer than 16 characters is a config error that names the field and the
// length and never shows the token; empty (mmkd makes one) is fine.
func TestTokenLength(t *testing.T) {
	tests := []struct {
		name  string
		token string
		err   bool
	}{
		{"unset", "", false},
		{"one character", "§", true},
		{"six", "s3cret", true},
		{"fifteen", "abcdefghijklmno", true},
		{"fifteen characters, more bytes", "ééééééééééééééé", true},
		{"sixteen", "abcdefghijklmnop", false},
		{"long", "0123456789abcdef0123456789abcdef", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Options{Environ: []string{"MMK_SERVER_TOKEN=" + tc.token}})
			if !tc.err {
				if err != nil {
					t.Errorf("error %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != "server.token" {
				t.Fatalf("got %v, want an error on server.token", err)
			}
			msg := err.Error()
			if n := strconv.Itoa(len([]rune(tc.token))); !strings.Contains(msg, "server.token") || !strings.Contains(msg, " "+n+" ") || !strings.Contains(msg, "16") {
				t.Errorf("error %q does not name the field, the length %s and the minimum", msg, n)
			}
			if strings.Contains(msg, tc.token) || fmt.Sprint(fe.Value) == tc.token {
				t.Errorf("error %q shows the token", msg)
			}
		})
	}
}

// TestDaemonKeys: the daemon's keys, their variables and their checks.
func TestDaemonKeys(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		wantKey string // "" : loads
	}{
		{"defaults", nil, ""},
		{"data dir from the environment", []string{"MMK_DATA_DIR=/srv/mmk"}, ""},
		{"beyond loopback without a token", []string{"MMK_SERVER_LISTEN=0.0.0.0:7070"}, "server.listen"},
		{"beyond loopback with a token", []string{"MMK_SERVER_LISTEN=0.0.0.0:7070", "MMK_SERVER_TOKEN=s3cret-0123456789"}, ""},
		{"ipv6 loopback", []string{"MMK_SERVER_LISTEN=[::1]:7070"}, ""},
		{"localhost", []string{"MMK_SERVER_LISTEN=localhost:7070"}, ""},
		{"bad policy", []string{"MMK_KERNELSCHED_POLICY=lottery"}, "kernelsched.policy"},
		{"bad mps switch", []string{"MMK_MPS_ENABLED=maybe"}, "mps.enabled"},
		{"zero memory", []string{"MMK_JOBS_DEFAULT_MEMORY_MIB=0"}, "jobs.default_memory_mib"},
		{"duration", []string{"MMK_JOBS_STOP_GRACE=3s"}, ""},
		{"default slo", []string{"MMK_SLO_DEFAULT=p99=2x"}, ""},
		{"slo without a unit", []string{"MMK_SLO_DEFAULT=p99=25"}, "slo.default"},
		{"slo window", []string{"MMK_SLO_WINDOW=0s"}, "slo.window"},
		{"slo aim", []string{"MMK_SLO_AIM=0.5"}, ""},
		{"slo aim zero", []string{"MMK_SLO_AIM=0"}, "slo.aim"},
		{"slo aim above one", []string{"MMK_SLO_AIM=1.5"}, "slo.aim"},
		{"slo ladder masks and holds", []string{"MMK_SLO_LADDER=priority,hold,tpcs=0.5"}, "slo.ladder"},
		{"slo ladder masks", []string{"MMK_SLO_LADDER=priority,tpcs=0.5,suspend"}, ""},
		{"slo ladder restrains at rung 0", []string{"MMK_SLO_LADDER=suspend,priority"}, "slo.ladder"},
		{"slo ladder restrains less on top", []string{"MMK_SLO_LADDER=priority,tpcs=0.25,tpcs=0.5"}, "slo.ladder"},
		{"slo mask ladder that holds", []string{"MMK_SLO_MASK_LADDER=priority,hold,tpcs=0.5"}, "slo.mask_ladder"},
		{"slo mask ladder without masks", []string{"MMK_SLO_MASK_LADDER=priority,suspend"}, "slo.mask_ladder"},
		{"slo mask ladder without masks, masks off", []string{"MMK_SLO_MASK_LADDER=priority,suspend", "MMK_SLO_MASKS=false"}, ""},
		{"slo mask ladder of a request mask", []string{"MMK_SLO_MASK_LADDER=priority,tpcs=0.5/req,tpcs=0.5,suspend"}, ""},
		{"slo max stop zero", []string{"MMK_SLO_MAX_STOP=0s"}, "slo.max_stop"},
		{"slo max stop share 1", []string{"MMK_SLO_MAX_STOP_SHARE=1"}, "slo.max_stop_share"},
		{"slo stop window short", []string{"MMK_SLO_STOP_WINDOW=10s"}, "slo.stop_window"},
		{"slo stop bound", []string{"MMK_SLO_MAX_STOP=5s", "MMK_SLO_MAX_STOP_SHARE=0.2", "MMK_SLO_STOP_WINDOW=1m"}, ""},
		{"slo restrain others", []string{"MMK_SLO_RESTRAIN_OTHERS=alice,bob"}, ""},
		{"slo restrain others, all", []string{"MMK_SLO_RESTRAIN_OTHERS=*"}, ""},
		{"slo restrain others, bad name", []string{"MMK_SLO_RESTRAIN_OTHERS=al ice"}, "slo.restrain_others[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(Options{Environ: tc.env})
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.name == "data dir from the environment" && c.DataDir != "/srv/mmk" {
					t.Errorf("data_dir %q", c.DataDir)
				}
				if tc.name == "slo aim" && c.SLO.ControllerConfig().Aim != 0.5 {
					t.Errorf("slo.aim 0.5: the controller's aim %v", c.SLO.ControllerConfig().Aim)
				}
				if tc.name == "defaults" && c.SLO.ControllerConfig().Aim != 1 {
					t.Errorf("default slo.aim: the controller's aim %v, want 1", c.SLO.ControllerConfig().Aim)
				}
				if tc.name == "duration" && c.Jobs.StopGrace.Seconds() != 3 {
					t.Errorf("stop_grace %v", c.Jobs.StopGrace)
				}
				if tc.name == "default slo" && c.SLO.Target().Ratio != 2 {
					t.Errorf("slo.default %q parsed to %v", c.SLO.Default, c.SLO.Target())
				}
				if tc.name == "defaults" && (!c.SLO.Controller || len(c.SLO.ControllerConfig().Ladder) != 5) {
					t.Errorf("slo %+v", c.SLO)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != tc.wantKey {
				t.Errorf("got %v, want an error on %s", err, tc.wantKey)
			}
		})
	}
}
