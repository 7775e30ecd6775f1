// Package clockshim finds, builds and drives libclockshim.so, the LD_PRELOAD
// library that moves a process's wall clock (csrc/clockshim.c). A process
// started with LD_PRELOAD=<library> and LOCKHARNESS_CLOCK_FILE=<file> sees
// CLOCK_REALTIME (clock_gettime, gettimeofday, time) moved by the state in
// the file: a fixed offset, or one that grows at a rate (a clock running
// fast or slow); its monotonic clock is untouched. WriteOffset, Shift and
// Drift change a running process's clock at once.
//
// The C source sits in csrc/ because the go tool refuses C files in a
// package directory that does not use cgo; it is embedded, so Build works
// from any directory.
package clockshim

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Source is the library's C source.
//
//go:embed csrc/clockshim.c
var Source []byte

const (
	// EnvLibrary overrides where Path looks for the library.
	EnvLibrary = "LOCKHARNESS_CLOCKSHIM"
	// EnvFile names the offset file to the library in the shimmed process.
	EnvFile = "LOCKHARNESS_CLOCK_FILE"
	// LibName is the library's file name; `make build` puts it in bin/.
	LibName = "libclockshim.so"
)

// offsetSize is the first format's length: the offset alone.
const offsetSize = 8

// Env returns the environment entries that load the library lib into a
// process and point it at the offset file.
func Env(lib, file string) []string {
	return []string{"LD_PRELOAD=" + lib, EnvFile + "=" + file}
}

// Path finds the built library: $LOCKHARNESS_CLOCKSHIM when set, else
// bin/libclockshim.so in the module root, found by walking up from the
// executable's directory and from the working directory to a go.mod.
func Path() (string, error) {
	if p := os.Getenv(EnvLibrary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("clock shim %s=%s: %w", EnvLibrary, p, err)
		}
		return filepath.Abs(p)
	}
	var starts, looked []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		root, ok := moduleRoot(dir)
		if !ok {
			continue
		}
		lib := filepath.Join(root, "bin", LibName)
		if _, err := os.Stat(lib); err == nil {
			return lib, nil
		}
		looked = append(looked, lib)
	}
	if len(looked) == 0 {
		return "", fmt.Errorf("clock shim not found: no module root above %s; set %s", strings.Join(starts, " or "), EnvLibrary)
	}
	return "", fmt.Errorf("clock shim not built (run `make build`); looked for %s", strings.Join(looked, ", "))
}

// moduleRoot walks up from dir to the first directory holding a go.mod.
func moduleRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Build compiles the embedded source with gcc into outDir/libclockshim.so
// and returns the library's absolute path. The library appears atomically
// (written under a temporary name, then renamed), so a concurrent Build or a
// process loading it never sees half a file.
func Build(outDir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("building the clock shim needs gcc (apt-get install gcc): %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(outDir, "."+LibName+".*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-Wall", "-x", "c", "-o", tmp.Name(), "-", "-ldl")
	cmd.Stdin = bytes.NewReader(Source)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc clockshim.c: %w\n%s", err, out)
	}
	lib, err := filepath.Abs(filepath.Join(outDir, LibName))
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), lib); err != nil {
		return "", err
	}
	return lib, nil
}

var (
	buildMu sync.Mutex
	built   string
)

// Find returns Path's library when there is one. When there is none (no
// `make build` yet) and $LOCKHARNESS_CLOCKSHIM is unset, it builds the
// library once into the user's cache, in a directory named after the
// source's hash so a stale build is never used, and reuses it afterwards.
func Find() (string, error) {
	lib, pathErr := Path()
	if pathErr == nil || os.Getenv(EnvLibrary) != "" {
		return lib, pathErr
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if built != "" {
		return built, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(Source)
	dir := filepath.Join(cache, "lockharness", "clockshim-"+hex.EncodeToString(sum[:6]))
	lib = filepath.Join(dir, LibName)
	if _, err := os.Stat(lib); err != nil {
		if lib, err = Build(dir); err != nil {
			return "", errors.Join(pathErr, err)
		}
	}
	built = lib
	return lib, nil
}

// State is a shimmed process's clock: its wall clock reads true time plus
// Offset plus Rate times the monotonic time since Anchor.
type State struct {
	Offset time.Duration
	// Rate is how much faster the clock runs, in parts per billion: 2%
	// fast is 20,000,000; negative runs slow.
	Rate int64
	// Anchor is CLOCK_MONOTONIC, in nanoseconds, when the rate started.
	Anchor int64
}

// At is the offset the state gives at monotonic time mono, computed as the
// shim computes it.
func (s State) At(mono int64) time.Duration {
	if s.Rate == 0 {
		return s.Offset
	}
	el := max(mono-s.Anchor, 0)
	const sec = int64(time.Second)
	return s.Offset + time.Duration(el/sec*s.Rate+el%sec*s.Rate/sec)
}

// Now is the offset the state gives now.
func (s State) Now() time.Duration { return s.At(Monotonic()) }

// Monotonic is CLOCK_MONOTONIC in nanoseconds: the clock the shim's rate
// counts on, the same for every process and container on the machine.
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// stateSize is the offset file's length: offset, rate, anchor and the
// sequence count, four int64s in native byte order (little-endian on amd64
// and arm64). The first format was the offset alone (8 bytes), which the
// shim still reads.
const stateSize = 32

// writeMu makes the harness the one writer the shim's seqlock assumes,
// whichever of its faults moves a clock.
var writeMu sync.Mutex

// WriteOffset sets the clock to a fixed offset d, stopping any drift, in
// the file at path, creating the file when it does not exist. A running
// process sees the new value on its next clock read.
func WriteOffset(path string, d time.Duration) error {
	return change(path, func(State, int64) State { return State{Offset: d} })
}

// Drift makes the clock in the file at path run fast (rate > 0) or slow
// by rate parts per billion from now on, from the offset it has now, and
// returns what takes that drift back: the rate the clock had, and the
// offset less exactly what this drift gained, so that a shift another
// fault made meanwhile stays.
func Drift(path string, rate int64) (undo func() error, err error) {
	var was, mine State
	err = change(path, func(now State, mono int64) State {
		was, mine = now, State{Rate: rate, Anchor: mono}
		return State{Offset: now.At(mono), Rate: rate, Anchor: mono}
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		return change(path, func(now State, mono int64) State {
			return settled(State{Offset: now.At(mono) - mine.At(mono), Rate: was.Rate, Anchor: mono})
		})
	}, nil
}

// Shift moves the clock in the file at path by d from wherever it is now,
// keeping its rate: faults that overlap on one node each add their move
// and take it back, so none undoes another's.
func Shift(path string, d time.Duration) error {
	return change(path, func(now State, mono int64) State {
		return settled(State{Offset: now.At(mono) + d, Rate: now.Rate, Anchor: mono})
	})
}

// settled is st with a fixed offset under a microsecond made 0: the
// rounding left when moves that overlapped are taken back, which no
// clock reader can see (Redis reads milliseconds), must not leave a clock
// that reads as moved.
func settled(st State) State {
	if st.Rate == 0 && st.Offset.Abs() < time.Microsecond {
		st.Offset = 0
	}
	return st
}

// errShort is a file too short to hold an offset: no shim maps it, and a
// change writes it whole.
var errShort = errors.New("too short for a clock state")

// change writes the state next gives from the file's state now (none for
// a missing or short file) and CLOCK_MONOTONIC now, holding writeMu across the read
// and the write, so that two faults' changes never interleave.
func change(path string, next func(now State, mono int64) State) error {
	writeMu.Lock()
	defer writeMu.Unlock()
	now, err := Read(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errShort) {
		return err
	}
	return write(path, next(now, Monotonic()))
}

// write sets the clock's whole state in the file at path.
//
// The state is changed in place, never by replacing the file (the shim maps
// the file's inode once): write maps the file shared and, as the shim's
// seqlock expects, makes the sequence count odd, stores the fields and
// makes it even again, each with an aligned atomic store. A file shorter
// than the state (a missing one, or the offset-only format) is first
// extended: no running shim maps it as a whole state, and one that maps
// the offset alone still reads the offset.
func write(path string, st State) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() < stateSize {
		if err := f.Truncate(stateSize); err != nil {
			return fmt.Errorf("clock state %s: %w", path, err)
		}
	}
	return mapped(f, stateSize, syscall.PROT_READ|syscall.PROT_WRITE, func(w []int64) {
		seq := (*uint64)(unsafe.Pointer(&w[3]))
		s := atomic.LoadUint64(seq)
		atomic.StoreUint64(seq, s|1)
		atomic.StoreInt64(&w[0], int64(st.Offset))
		atomic.StoreInt64(&w[1], st.Rate)
		atomic.StoreInt64(&w[2], st.Anchor)
		atomic.StoreUint64(seq, (s|1)+1)
	})
}

// Read returns the clock's state in the file at path; a file in the
// offset-only format has no rate.
func Read(path string) (State, error) {
	f, err := os.Open(path)
	if err != nil {
		return State{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return State{}, err
	}
	var st State
	switch {
	case info.Size() >= stateSize:
		err = mapped(f, stateSize, syscall.PROT_READ, func(w []int64) {
			seq := (*uint64)(unsafe.Pointer(&w[3]))
			// As the shim does: a writer that died mid-change leaves seq
			// odd for good, and the values are then taken as they are.
			for tries := 0; ; tries++ {
				before := atomic.LoadUint64(seq)
				st = State{Offset: time.Duration(atomic.LoadInt64(&w[0])), Rate: atomic.LoadInt64(&w[1]), Anchor: atomic.LoadInt64(&w[2])}
				if (before&1 == 0 && atomic.LoadUint64(seq) == before) || tries >= 100000 {
					return
				}
			}
		})
	case info.Size() >= offsetSize:
		err = mapped(f, offsetSize, syscall.PROT_READ, func(w []int64) { st.Offset = time.Duration(atomic.LoadInt64(&w[0])) })
	default:
		err = fmt.Errorf("clock state %s: %d bytes, want %d: %w", path, info.Size(), stateSize, errShort)
	}
	return st, err
}

// ReadOffset returns the clock's offset now in the file at path.
func ReadOffset(path string) (time.Duration, error) {
	st, err := Read(path)
	return st.Now(), err
}

// mapped maps the file's first n bytes shared and calls fn with them as
// int64s; the mapping is page-aligned, so every int64 is too.
func mapped(f *os.File, n int, prot int, fn func([]int64)) error {
	m, err := syscall.Mmap(int(f.Fd()), 0, n, prot, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("clock state %s: mmap: %w", f.Name(), err)
	}
	defer syscall.Munmap(m)
	fn(unsafe.Slice((*int64)(unsafe.Pointer(&m[0])), n/8))
	return nil
}
