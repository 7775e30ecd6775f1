package resource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockharness/lockharness/internal/proc"
)

// ErrNoPostgres is a machine without PostgreSQL's server binaries.
var ErrNoPostgres = errors.New("PostgreSQL is not installed (initdb and postgres not found in /usr/lib/postgresql/*/bin or on PATH); `make setup` installs Debian's postgresql package")

// PostgresUser and PostgresDatabase are who the workers log in as and where
// the tables are.
const (
	PostgresUser     = "harness"
	PostgresDatabase = "postgres"
)

// PostgresBin is the directory holding initdb and postgres: the newest of
// Debian's /usr/lib/postgresql/*/bin, or the one on PATH.
func PostgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if isFile(filepath.Join(dirs[i], "initdb")) && isFile(filepath.Join(dirs[i], "postgres")) {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(p); isFile(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoPostgres
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// Server is a PostgreSQL server the harness started for one run: its data
// directory and log in the run directory, listening on 127.0.0.1 only. It
// runs as a child of the harness in its own process group, killed by the
// kernel if the harness dies.
type Server struct {
	// Addr is where it listens (host:port). Workers reach it through
	// links of their own, not here.
	Addr string
	dir  string
	// home holds the data directory; scratch is set when it is a
	// temporary directory, removed on Close, and owner is the lock on it
	// that tells other harnesses' sweeps it is in use.
	home, scratch string
	owner         *os.File
	bin           string
	cmd           *exec.Cmd
	done          chan struct{}
}

// StartPostgres initialises a database cluster in dir/data and starts a
// server on a free port, returning once it accepts connections. PostgreSQL
// refuses to run as root; a root harness runs it as the postgres system
// user.
func StartPostgres(ctx context.Context, dir string) (*Server, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "postgres.log")
	home := dir
	var scratch string
	if cred != nil {
		// The postgres user must reach its data directory; a run directory
		// under a private one (root's home, a test's temp dir) is out of
		// its reach, so the data then lives in a temporary directory of
		// its own. The log is in dir either way.
		if !othersCanEnter(filepath.Dir(dir)) {
			sweepScratch()
			if scratch, err = os.MkdirTemp("", scratchPattern); err != nil {
				return nil, err
			}
			home = scratch
		}
	}
	var owner *os.File
	if scratch != "" {
		if owner, err = lockScratch(scratch); err != nil {
			os.RemoveAll(scratch)
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	started := false
	defer func() {
		if !started {
			os.RemoveAll(filepath.Join(home, "data"))
			if scratch != "" {
				os.RemoveAll(scratch)
				owner.Close()
			}
		}
	}()
	if cred != nil {
		if err := os.Chown(home, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("postgres: give %s to the postgres user: %w", home, err)
		}
	}
	data := filepath.Join(home, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", PostgresUser, "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.WriteFile(filepath.Join(dir, "initdb.log"), out, 0o644)
		return nil, fmt.Errorf("postgres: initdb %s: %v: %s", data, err, lastLine(out))
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// Durability is not under test here: every write is judged by what
	// the server answered while it ran, and the server is never killed
	// mid-run, so fsync only slows the run down.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-c", "unix_socket_directories=",
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := proc.Start(cmd); err != nil {
		return nil, fmt.Errorf("postgres: start: %w", err)
	}
	started = true
	p := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, home: home, scratch: scratch, owner: owner, bin: bin, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		proc.Forget(cmd)
		close(p.done)
	}()
	if err := p.waitReady(ctx, 30*time.Second); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// othersCanEnter reports whether a user who is neither the owner nor in
// the group can reach dir: every directory up to the root lets others in.
func othersCanEnter(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// postgresCredential is who the server runs as: nil (the harness's own
// user) unless the harness is root.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres refuses to run as root and there is no postgres user to run it as (%v); `make setup` installs the postgresql package, which creates it", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// waitReady waits until the server accepts a connection: the condition,
// not a sleep.
func (p *Server) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, DSN(p.Addr))
		ccancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("postgres exited before it accepted connections; its log ends:\n%s", proc.Tail(p.LogPath(), 10))
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections on %s within %v (%v); its log ends:\n%s", p.Addr, within, err, proc.Tail(p.LogPath(), 10))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Version is the server's own account of itself (SHOW server_version) and
// the directory it ran from.
func (p *Server) Version(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, DSN(p.Addr))
	if err != nil {
		return "unknown: " + err.Error()
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "unknown: " + err.Error()
	}
	return "PostgreSQL " + v + " (" + p.bin + ")"
}

// LogPath is the server's log file.
func (p *Server) LogPath() string { return filepath.Join(p.dir, "postgres.log") }

// DSN is the connection string for a server (or a link to one) at addr.
func DSN(addr string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PostgresUser, addr, PostgresDatabase)
}

// Close stops the server: a fast shutdown (SIGINT), then SIGKILL of its
// process group if it has not exited within 5 s.
func (p *Server) Close() error {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			proc.Kill(p.cmd)
			<-p.done
		}
	}
	// Backends left behind by a killed postmaster exit on their own once
	// they see it gone; the group kill takes any that have not.
	proc.Kill(p.cmd)
	// The final rows are in the run directory (history.Tables); the data
	// directory, some 40 MB, is not kept.
	os.RemoveAll(filepath.Join(p.home, "data"))
	if p.scratch != "" {
		os.RemoveAll(p.scratch)
		p.owner.Close()
	}
	return nil
}

// ownerLock is the file in a scratch directory whose lock its harness
// holds while it uses the directory. The kernel drops the lock when that
// harness dies, however it dies, so a sweep can tell a live owner from a
// dead one: a server's postmaster.pid cannot, while initdb's bootstrap
// backend writes its pid negated, or before any server wrote one.
const ownerLock = "owner.lock"

// lockScratch takes the owner's lock on a scratch directory just made. The
// lock file is locked under another name and then renamed into place, so
// that no sweep ever finds it unlocked.
func lockScratch(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".owner-*")
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, ownerLock)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepScratch removes the temporary data directories of harnesses that
// are gone: one killed with SIGKILL could not remove its own. A directory
// whose owner's lock is held is in use; one without a lock file yet is
// taken to be starting for a minute.
func sweepScratch() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), scratchPattern))
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, ownerLock))
		if errors.Is(err, fs.ErrNotExist) {
			// Not yet locked, or left by a harness before the lock: a
			// server of its own that still runs keeps it.
			if fi, err := os.Stat(d); err != nil || time.Since(fi.ModTime()) < time.Minute || serverRuns(d) {
				continue
			}
			os.RemoveAll(d)
			continue
		}
		if err != nil {
			continue // unreadable: not ours to judge
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(d) // its owner is gone; we hold the lock while removing
		}
		f.Close()
	}
}

// serverRuns reports whether the server of data directory dir/data still
// runs, by its postmaster.pid (a standalone backend writes its pid negated).
func serverRuns(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	pid = max(pid, -pid)
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

const scratchPattern = "lockharness-postgres-*"
