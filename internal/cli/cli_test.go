package cli

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFlagsSetConfigKeys(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("listen", "", "")
	f := AddConfigFlags(fs, map[string]string{"server.listen": "listen"})
	if err := fs.Parse([]string{"--backend", "fake", "--listen", "127.0.0.1:9", "--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.GPU.Backend != "fake" || c.Server.Listen != "127.0.0.1:9" || c.Log.Format != "json" || c.Log.Level != "info" {
		t.Errorf("config %+v", c)
	}
	b, err := OpenBackend(c, c.Log.NewLogger(io.Discard))
	if err != nil || b.Name() != "fake" {
		t.Fatalf("backend: %v", err)
	}
	b.Close()
}

func TestUndefinedFlagIsAnError(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := AddConfigFlags(fs, map[string]string{"server.listen": "listen"})
	if _, err := f.Load(); err == nil || !strings.Contains(err.Error(), "flag --listen for server.listen is not defined") {
		t.Errorf("error = %v", err)
	}
}
