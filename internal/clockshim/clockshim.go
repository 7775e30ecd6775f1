// Package clockshim finds, builds and drives libclockshim.so, the LD_PRELOAD
// library that moves a process's wall clock (csrc/clockshim.c). A process
// started with LD_PRELOAD=<library> and LOCKHARNESS_CLOCK_FILE=<file> sees
// CLOCK_REALTIME (clock_gettime, gettimeofday, time) moved by the offset in
// the file; its monotonic clock is untouched. WriteOffset changes the offset
// of a running process at once.
//
// The C source sits in csrc/ because the go tool refuses C files in a
// package directory that does not use cgo; it is embedded, so Build works
// from any directory.
package clockshim

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
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

// offsetSize is the offset file's length: one int64 of nanoseconds in native
// byte order (little-endian on amd64 and arm64).
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

// WriteOffset sets the clock offset in the file at path, creating the file
// when it does not exist. A running process sees the new value on its next
// clock read.
//
// The value is changed in place, never by replacing the file (the shim maps
// the file's inode once): WriteOffset maps the file's first page shared and
// stores the 8 bytes with one aligned atomic store, which the shim reads
// with one aligned atomic load, so no reader ever sees a torn value. A file
// shorter than 8 bytes is written with a plain write instead: no shim maps
// such a file.
func WriteOffset(path string, d time.Duration) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < offsetSize {
		var b [offsetSize]byte
		binary.NativeEndian.PutUint64(b[:], uint64(d))
		if _, err := f.WriteAt(b[:], 0); err != nil {
			return fmt.Errorf("clock offset %s: %w", path, err)
		}
		return nil
	}
	return mapped(f, syscall.PROT_READ|syscall.PROT_WRITE, func(p *int64) { atomic.StoreInt64(p, int64(d)) })
}

// ReadOffset returns the clock offset in the file at path.
func ReadOffset(path string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Size() < offsetSize {
		return 0, fmt.Errorf("clock offset %s: %d bytes, want %d", path, st.Size(), offsetSize)
	}
	var d time.Duration
	err = mapped(f, syscall.PROT_READ, func(p *int64) { d = time.Duration(atomic.LoadInt64(p)) })
	return d, err
}

// mapped maps the file's first 8 bytes shared and calls fn with them as an
// int64; the mapping is page-aligned, so the int64 is too.
func mapped(f *os.File, prot int, fn func(*int64)) error {
	m, err := syscall.Mmap(int(f.Fd()), 0, offsetSize, prot, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("clock offset %s: mmap: %w", f.Name(), err)
	}
	defer syscall.Munmap(m)
	fn((*int64)(unsafe.Pointer(&m[0])))
	return nil
}
