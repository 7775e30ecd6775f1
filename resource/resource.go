// Package resource is what the lock protects, as a registry of kinds
// (Resources): the embedded in-memory counter (the default), and
// PostgreSQL, a real database the workers write to through links of their
// own. For PostgreSQL it owns the server's lifecycle (one per run, started
// and stopped by the harness), a client's connection and the transaction
// that names the writer to the database, and the vocabulary of fenced
// writes (fencing modes, a team's own statement). What a workload's tables
// hold and how it writes them is the workload's (package workloads).
package resource

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Resources a run can protect.
const (
	Memory   = "memory"
	Postgres = "postgres"
)

// Resource is a kind of resource a run protects, as a spec names it.
type Resource struct {
	Name    string
	Summary string
	// Database: the clients' workers write to it themselves, each through
	// a link of its own, and every run starts a server of its own.
	Database bool
	// LocalOnly: its server runs as a process beside the harness, so not
	// with the docker backend.
	LocalOnly bool
	// Available says why it cannot run on this machine; nil: it can.
	Available func() error
	// StartServer starts a database's server for one run in dir.
	StartServer func(ctx context.Context, dir string) (*Server, error)
}

// Resources are the resources this build knows, the default first.
var Resources = []Resource{
	{Name: Memory, Summary: "a counter per lock key in the harness's memory; fenced when the lock hands out fences"},
	{Name: Postgres, Summary: "a PostgreSQL server of the run's own (Debian's postgresql), each client writing through a link of its own",
		Database: true, LocalOnly: true, Available: func() error { _, err := PostgresBin(); return err }, StartServer: StartPostgres},
}

// Lookup finds a resource by name.
func Lookup(name string) (Resource, bool) {
	for _, r := range Resources {
		if r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

// Names lists the resources' names.
func Names() []string {
	names := make([]string, len(Resources))
	for i, r := range Resources {
		names[i] = r.Name
	}
	return names
}

// How an inventory write is fenced.
const (
	// FenceNone: a plain decrement.
	FenceNone = "none"
	// FenceWhere: the database compares the fence in the statement: a
	// write passes unless a higher fence has written (equal passes, so a
	// holder may write several times).
	FenceWhere = "where"
	// FenceCAS: the statement matches the lock_token the writer read.
	FenceCAS = "cas"
	// FenceAppCheck: the client reads lock_token, compares it with its
	// fence itself, then writes in a second statement.
	FenceAppCheck = "app-check"
	// FenceSQL: the user's own statement (--write-sql).
	FenceSQL = "sql"
)

// Fencings lists the fencing modes --fencing takes.
var Fencings = []string{FenceNone, FenceWhere, FenceCAS, FenceAppCheck}

// ChecksFence reports whether writes made under the fencing mode (with
// the statement, for FenceSQL) are compared with the fences accepted
// before them: where and app-check compare, and a statement that names
// :fence is taken to.
func ChecksFence(mode string, st *Statement) bool {
	switch mode {
	case FenceWhere, FenceAppCheck:
		return true
	case FenceSQL:
		return st != nil && slices.Contains(st.Params, "fence")
	}
	return false
}

// Fencing says what a fencing mode does, for errors and help.
func Fencing(mode string) string {
	switch mode {
	case FenceNone:
		return "UPDATE inventory SET quantity = quantity - 1 (no fence)"
	case FenceWhere:
		return "UPDATE ... WHERE sku = $1 AND lock_token <= $fence"
	case FenceCAS:
		return "UPDATE ... WHERE sku = $1 AND lock_token = $previous (the version the writer read)"
	case FenceAppCheck:
		return "SELECT lock_token, compare in the client, then a plain UPDATE"
	}
	return mode
}

// Parameters a --write-sql statement may name.
var SQLParams = []string{"sku", "fence", "token", "client"}

// Statement is a user's write statement with its named parameters
// (:sku, :fence, :token, :client) turned into positional ones.
type Statement struct {
	// Text is the statement as the user wrote it; SQL is the one sent,
	// with $1... in place of the names.
	Text, SQL string
	// Params are the names behind $1, $2, ....
	Params []string
}

// ParseStatement turns :name parameters into $n. A name it does not know
// is an error naming the valid ones; a cast (::int), an array slice
// (a[1:2]) and anything inside quotes, dollar quotes or comments is left
// alone. One statement only: a trailing semicolon is dropped.
func ParseStatement(text string) (Statement, error) {
	st := Statement{Text: text}
	if strings.TrimSpace(text) == "" {
		return st, fmt.Errorf("the statement is empty")
	}
	var out strings.Builder
	index := map[string]int{}
	rs := []rune(text)
	// closer is what ends the literal or comment the scanner is in ("" when
	// in neither); escapes is set inside an E'...' string.
	closer, escapes := "", false
	at := func(i int, s string) bool { return strings.HasPrefix(string(rs[i:]), s) }
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case closer != "":
			if escapes && r == '\\' && i+1 < len(rs) {
				out.WriteRune(r)
				i++
				r = rs[i]
			} else if at(i, closer) {
				out.WriteString(closer)
				i += len([]rune(closer)) - 1
				closer, escapes = "", false
				continue
			}
		case r == '\'':
			closer, escapes = "'", i > 0 && (rs[i-1] == 'E' || rs[i-1] == 'e') && (i < 2 || !isIdent(rs[i-2]))
		case r == '"':
			closer = `"`
		case at(i, "--"):
			closer = "\n"
		case at(i, "/*"):
			out.WriteString("/*")
			i++
			closer = "*/"
			continue
		case r == '$':
			if tag := dollarTag(rs[i:]); tag != "" {
				out.WriteString(tag)
				i += len([]rune(tag)) - 1
				closer = tag
				continue
			}
		case r == ';':
			if strings.TrimSpace(string(rs[i+1:])) != "" {
				return st, fmt.Errorf("the statement holds more than one statement; give one")
			}
			i = len(rs)
			continue
		case at(i, "::"):
			out.WriteString("::")
			i++
			continue
		case r == ':' && i+1 < len(rs) && isIdentStart(rs[i+1]):
			j := i + 1
			for j < len(rs) && isIdent(rs[j]) {
				j++
			}
			name := string(rs[i+1 : j])
			if !slices.Contains(SQLParams, name) {
				return st, fmt.Errorf("unknown parameter :%s (valid: :%s)", name, strings.Join(SQLParams, ", :"))
			}
			n, seen := index[name]
			if !seen {
				st.Params = append(st.Params, name)
				n = len(st.Params)
				index[name] = n
			}
			fmt.Fprintf(&out, "$%d", n)
			i = j - 1
			continue
		}
		out.WriteRune(r)
	}
	st.SQL = strings.TrimSpace(out.String())
	return st, nil
}

// dollarTag is the $tag$ that opens a dollar-quoted string at the start of
// rs, or "".
func dollarTag(rs []rune) string {
	for j := 1; j < len(rs); j++ {
		switch {
		case rs[j] == '$':
			return string(rs[:j+1])
		case !isIdent(rs[j]) || j == 1 && !isIdentStart(rs[j]):
			return ""
		}
	}
	return ""
}

func isIdentStart(r rune) bool { return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func isIdent(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}
