package webtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// JobMetrics reads a /metrics body into the form of the golden list
// web/testdata/job-metrics.golden: each mmk_job_* metric with the labels
// its series carry, "name{label,...}", sorted. A family without help is
// an error.
func JobMetrics(body string) ([]string, error) { return Metrics(body, "mmk_job_") }

// Metrics reads a /metrics body into the form of a golden list (as
// JobMetrics): each metric whose name starts with prefix with the labels
// its series carry, "name{label,...}", sorted.
func Metrics(body, prefix string) ([]string, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("not the Prometheus text format: %w", err)
	}
	var out []string
	for name, f := range families {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if f.GetHelp() == "" {
			return nil, fmt.Errorf("%s has no help", name)
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		out = append(out, name+"{"+strings.Join(labels, ",")+"}")
	}
	slices.Sort(out)
	return out, nil
}

// ReadGolden reads a golden list: one entry a line, blank lines and
// lines starting with # left out, sorted.
func ReadGolden(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("golden list: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out, sc.Err()
}
