package harness

import (
	"fmt"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/scenario"
)

// stopOnFlag registers --stop-on-anomaly with its default: "off" for run,
// "expected" for the verbs that know what each scenario should report.
func stopOnFlag(c *command, def string) *string {
	usage := "end a run as soon as an audit during it is certain of one of these anomalies (`KINDS`: " +
		strings.Join(checker.OnlineAnomalies, ", ") + ", any, or off); it then heals, checks liveness and is checked offline as usual"
	if def == "expected" {
		usage += "; expected: an unsafe scenario's own anomaly (any for one that names none), off for a safe one"
	}
	return c.String("stop-on-anomaly", def, usage)
}

// stopOn resolves --stop-on-anomaly's value for a run whose expectation is
// expect (nil: none).
func stopOn(value string, expect *scenario.Expect) ([]string, error) {
	switch value {
	case "", "off":
		return nil, nil
	case "expected":
		if expect == nil {
			return nil, nil
		}
		return expect.StopOn(), nil
	}
	kinds, err := checker.ParseAnomalies(value)
	if err != nil {
		return nil, fmt.Errorf("--stop-on-anomaly: %w", err)
	}
	return kinds, nil
}
