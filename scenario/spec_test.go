package scenario

import (
	"flag"
	"reflect"
	"strings"
	"testing"
)

// shellWords splits a command line as a POSIX shell would for the quoting
// Command uses: words separated by spaces, 'single quotes' kept whole.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// The recorded re-run command carries every flag: give every spec flag a
// value other than its default, write the command, parse it back with the
// same flags, and get the same spec.
func TestCommandRoundTripsEveryFlag(t *testing.T) {
	values := map[string]string{
		"topology": "redlock", "backend": "docker", "image": "redis:7.2", "lock": "redsync:setnx-on-extend:tries=1",
		"nemesis": "partition:for=1s,partition-majorities+kill-node:delay=4s", "nemesis-interval": "3s",
		"workload": "mutex", "clients": "3", "nodes": "7", "time-limit": "13s", "ttl": "3s", "hold": "1s",
		"op-timeout": "250ms", "persistence": "aof-always", "key": "lock:it's mine", "seed": "7", "name": "a name",
		"worker-cmd": "/usr/bin/python3 'my worker.py' --x=1",
		"auth":       "true", "tls": "true", "target": "redis://staging.example:6380",
		"resource": "postgres", "fencing": "app-check", "write-sql": "my write.sql", "keys": "12", "idempotent": "true",
		"shards": "4", "replicas": "2", "backoff": "5ms", "writes": "3",
	}
	s := Defaults()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	s.RegisterFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := values[f.Name]
		if !ok {
			t.Errorf("flag --%s has no value in this test: give it one", f.Name)
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			t.Errorf("--%s %s: %v", f.Name, v, err)
		}
	})
	// Every field set: a field without a flag would stay zero here.
	rv := reflect.ValueOf(s)
	for i := 0; i < rv.NumField(); i++ {
		// A schedule is no flag's: `harness run --schedule FILE` reads
		// one, and a run that follows one re-runs with its own file.
		if rv.Type().Field(i).Name == "Schedule" {
			continue
		}
		if rv.Field(i).IsZero() {
			t.Errorf("Spec.%s is not set by any flag", rv.Type().Field(i).Name)
		}
	}
	cmd := s.Command()
	words := shellWords(t, cmd)
	if len(words) < 2 || words[0] != "harness" || words[1] != "run" {
		t.Fatalf("command %q", cmd)
	}
	back := Defaults()
	bfs := flag.NewFlagSet("run", flag.ContinueOnError)
	back.RegisterFlags(bfs)
	if err := bfs.Parse(words[2:]); err != nil || bfs.NArg() != 0 {
		t.Fatalf("parsing %q: %v, left %q", cmd, err, bfs.Args())
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip through %q:\n got %+v\nwant %+v", cmd, back, s)
	}

	// Seed 0 is a seed like any other, and the re-run says so.
	z := Defaults()
	z.Seed = 0
	if !strings.Contains(z.Command(), " --seed 0") {
		t.Errorf("seed 0 left out of %q", z.Command())
	}
	// A switch that is off is left out; one that is on stands alone.
	if cmd := z.Command(); strings.Contains(cmd, "--auth") || strings.Contains(cmd, "--tls") {
		t.Errorf("switches that are off written into %q", cmd)
	}
	if !strings.Contains(cmd, " --auth --tls") && !strings.Contains(cmd, " --auth ") {
		t.Errorf("--auth not written alone into %q", cmd)
	}
}

func TestResolveFillsDefaultsAndSpellsCanonically(t *testing.T) {
	s := Defaults()
	s.Topology, s.Lock, s.Nemesis, s.Backend = "redlock", "redsync:tries=1,setnx-on-extend", "partition-majorities+kill-node:delay=4s", "docker"
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	got := p.Spec
	if got.Lock != "redsync:setnx-on-extend:tries=1" || got.Nodes != 5 || got.Image == "" || got.Name != "redlock-redsync-setnx-on-extend-tries1-partition-majorities+kill-node-delay4s" {
		t.Errorf("resolved %+v", got)
	}
	if p.Lock.Name != "redsync" || len(p.Nemesis) != 1 || len(p.Nemesis[0]) != 2 || p.Cluster.Topology != "redlock" {
		t.Errorf("plan %+v", p)
	}
}

// A fault's client slots must be the run's.
func TestClientSlotsMustFit(t *testing.T) {
	s := Defaults()
	s.Nemesis = "partition:clients=1/7"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "nemesis partition:clients=1/7: no client 7 among 4 clients (slots 0 to 3)") {
		t.Errorf("slot 7 of 4 clients: %v", err)
	}
	s.Nemesis = "partition:clients=1/3"
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
}

// Provenance names only the library that ran: redsync's for redsync, none
// for a recipe of the harness's own.
func TestLockProvenanceNamesOnlyWhatRan(t *testing.T) {
	for lock, library := range map[string]string{"redsync": "github.com/go-redsync/redsync/v4", "cad": ""} {
		s := Defaults()
		s.Lock = lock
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		lp := p.LockProvenance()
		// (A test binary carries no module versions: the binary's do.)
		if lp.Recipe != lock || lp.Name != lock || lp.Library != library || library == "" && lp.Version != "" {
			t.Errorf("%s: %+v, want library %q", lock, lp, library)
		}
	}
}

func TestValidateNamesBadValues(t *testing.T) {
	s := Defaults()
	s.Lock, s.Nemesis, s.Clients = "nosuch", "partition,bogus", 0
	err := s.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`unknown lock "nosuch" (valid: cad, del, etcd, etcd-fenced, fenced, naive, redislock, redlock, redsync, renew, rueidislock, wait, exec;`, `unknown nemesis "bogus"`, "clients must be at least 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// The spec line states the persistence the nodes run with: an etcd
// member keeps its log whatever --persistence says of Redis's nodes.
func TestSpecLineStatesThePersistenceInEffect(t *testing.T) {
	for topology, want := range map[string]string{"etcd": "persistence wal", "single": "persistence none"} {
		s := Defaults()
		s.Topology = topology
		if line := s.Line(); !strings.Contains(line, want) {
			t.Errorf("%s: %q, want %q", topology, line, want)
		}
	}
}
