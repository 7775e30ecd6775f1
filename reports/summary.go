package reports

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Summary prints the one-screen console summary of a run.
func Summary(w io.Writer, title, specLine string, res Results, dir string) {
	fmt.Fprintf(w, "\n%s  (seed %d)\n", title, res.Seed)
	fmt.Fprintf(w, "  spec        %s\n", specLine)
	if pr := res.Provenance; pr != nil && pr.Lock != nil && pr.Lock.Label() != pr.Lock.Recipe {
		// The lock under test as it named itself, which the spec's
		// "lock exec" does not say.
		fmt.Fprintf(w, "  lock        %s\n", pr.Lock.Label())
	}
	fmt.Fprintf(w, "  faults      %s\n", countsLine(res.Faults, "none"))
	kinds := make([]string, 0, len(res.Stats))
	for k := range res.Stats {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range kinds {
		s := res.Stats[k]
		fmt.Fprintf(tw, "  %-10s  ok %d\tfail %d\tinfo %d\tp50 %.1fms\tp99 %.1fms\tmax %.1fms\n",
			k, s.OK, s.Fail, s.Info, s.P50Ms, s.P99Ms, s.MaxMs)
	}
	tw.Flush()
	var an []string
	for _, name := range checker.AnomalyNames {
		an = append(an, name+" "+AnomalyCount(res, name))
	}
	fmt.Fprintf(w, "  anomalies   %s\n", strings.Join(an, "  "))
	fmt.Fprintf(w, "  fencing     rejected %d\n", res.Fencing.Rejected)
	if db := res.Checker.Database; db != nil {
		for _, line := range DatabaseLines(db) {
			fmt.Fprintf(w, "  database    %s\n", line)
		}
	} else {
		fmt.Fprintf(w, "  counter     %d acknowledged writes, final value %d\n", res.Checker.Counter.Acknowledged, res.Checker.Counter.Final)
	}
	fmt.Fprintf(w, "  liveness    %s\n", res.Checker.Liveness)
	if c := Closest(res.Margins); c != nil {
		fmt.Fprintf(w, "  margins     %s\n", MarginsLine(res.Margins))
		fmt.Fprintf(w, "  closest     %s %s: %s\n", c.Property, marginText(c.Ms), c.Says)
	}
	shown := map[string]bool{}
	for _, f := range res.Checker.Findings {
		if shown[f.Anomaly] {
			continue
		}
		shown[f.Anomaly] = true
		fmt.Fprintf(w, "  first %s: %s\n", f.Anomaly, f.Narrative)
	}
	for _, n := range res.Checker.Notes {
		fmt.Fprintf(w, "  note        %s\n", n)
	}
	if res.Error != nil {
		fmt.Fprintf(w, "  error       the harness failed: %s\n", res.Error.String())
	}
	verdict := strings.ToUpper(res.Valid.String())
	if res.Valid == checker.Failed {
		verdict = "ERROR, no verdict"
	}
	fmt.Fprintf(w, "  verdict     %s (exit %d)\n", verdict, res.Valid.ExitCode())
	fmt.Fprintf(w, "  run dir     %s\n", dir)
	fmt.Fprintf(w, "  re-run      %s\n", res.Command)
}

func countsLine(counts map[string]int, empty string) string {
	if len(counts) == 0 {
		return empty
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, counts[k])
	}
	return strings.Join(parts, "  ")
}

// DatabaseLines say what a real resource's final rows hold, a line each:
// what each audit the workload declared found, or, with none, the rows of
// accepted writes.
func DatabaseLines(db *checker.Database) []string {
	var lines []string
	if slices.Contains(db.Audits, history.AuditLedger) {
		lines = append(lines, fmt.Sprintf("%s %s, fencing %s: %d units sold of %d, %d writes in the ledger", db.Resource, db.Workload, db.Fencing, db.Sold, db.Initial, db.Ledger))
		for _, r := range db.Inventory {
			lines = append(lines, fmt.Sprintf("final row: sku %s quantity %d lock_token %d", r.SKU, r.Quantity, r.LockToken))
		}
	}
	if slices.Contains(db.Audits, history.AuditDuplicates) {
		line := fmt.Sprintf("%s %s: %d of %d jobs processed, %d done rows; duplicate work %d jobs (%.1f per 1,000 processed)",
			db.Resource, db.Workload, db.Processed, db.Jobs, db.DoneRows, db.Duplicated, db.DuplicatePer1000)
		if db.Absorbed > 0 {
			line += fmt.Sprintf("; %d repeat processings absorbed by the idempotent insert", db.Absorbed)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("%s %s: %d accepted writes in its %s table", db.Resource, db.Workload, db.Accepted, db.Table))
	}
	return lines
}
