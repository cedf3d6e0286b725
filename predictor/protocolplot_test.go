package predictor

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// TestWriteProtocolSVG: one bar per model and fold kind with its value,
// the splits' spread as a whisker, the noise floor as a line, and a
// well-formed document.
func TestWriteProtocolSVG(t *testing.T) {
	res := &ProtocolResult{
		Samples: 100, Configs: 40,
		Floor: NoiseFloor{Samples: 30, RelError: 0.032},
		Models: []ProtocolModel{
			{Model: "gbrt", ConfigsMean: 0.082, ConfigsMin: 0.07, ConfigsMax: 0.09, TypeOut: []JobErrors{{}}, TypeOutMean: 0.2},
			{Model: "lr", ConfigsMean: 0.31, ConfigsMin: 0.3, ConfigsMax: 0.33},
		},
		Best: "gbrt",
	}
	var b bytes.Buffer
	if err := WriteProtocolSVG(&b, "compare <test>", res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out)
	}
	for _, want := range []string{"compare &lt;test&gt;", "mean relative error", `class="bar"`, `class="whisker"`, `class="floor"`, "noise floor 3.2%", ">8.2%<", ">20.0%<", ">31.0%<", ">gbrt<", ">lr<"} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %q:\n%s", want, out)
		}
	}
	// lr has no leave-type-out fold: 3 bars, not 4.
	if n := strings.Count(out, `class="bar"`); n != 3 {
		t.Errorf("%d bars, want 3", n)
	}
}
