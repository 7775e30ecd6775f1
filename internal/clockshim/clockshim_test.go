package clockshim

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWriteReadOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock.offset")
	if _, err := ReadOffset(path); err == nil {
		t.Fatal("ReadOffset of a missing file succeeded")
	}
	for _, d := range []time.Duration{0, 4 * time.Second, -200 * time.Second, 1500 * time.Millisecond, time.Nanosecond} {
		if err := WriteOffset(path, d); err != nil {
			t.Fatal(err)
		}
		got, err := ReadOffset(path)
		if err != nil || got != d {
			t.Fatalf("ReadOffset after WriteOffset(%v) = %v, %v", d, got, err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != stateSize {
			t.Fatalf("offset file: %v, %v; want %d bytes", st, err, stateSize)
		}
	}
}

func TestWriteOffsetKeepsTheInode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock.offset")
	WriteOffset(path, 0)
	before, _ := os.Stat(path)
	WriteOffset(path, time.Hour)
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Fatal("WriteOffset replaced the file; a mapped shim would not see the change")
	}
}

func TestShortFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock.offset")
	os.WriteFile(path, []byte{1, 2, 3}, 0o644)
	if _, err := ReadOffset(path); err == nil {
		t.Fatal("ReadOffset of a 3-byte file succeeded")
	}
	if err := WriteOffset(path, time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := ReadOffset(path); err != nil || d != time.Second {
		t.Fatalf("after rewriting a short file: %v, %v", d, err)
	}
}

func build(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	lib, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// epoch runs date under the shim and returns the seconds it printed.
func epoch(t *testing.T, env ...string) int64 {
	t.Helper()
	cmd := exec.Command("date", "+%s")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	s, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestShimMovesTheWallClock(t *testing.T) {
	lib := build(t)
	file := filepath.Join(t.TempDir(), "clock.offset")
	for _, d := range []time.Duration{time.Hour, -time.Hour, 0} {
		if err := WriteOffset(file, d); err != nil {
			t.Fatal(err)
		}
		got := epoch(t, Env(lib, file)...) - time.Now().Unix()
		if want := int64(d / time.Second); got < want-2 || got > want+2 {
			t.Errorf("offset %v: date is %+ds off, want %+d", d, got, want)
		}
	}
	// Without the file, or with a missing one, the clock is not moved.
	for _, env := range [][]string{{"LD_PRELOAD=" + lib}, Env(lib, filepath.Join(t.TempDir(), "none"))} {
		if got := epoch(t, env...) - time.Now().Unix(); got < -2 || got > 2 {
			t.Errorf("%v: date is %+ds off, want 0", env, got)
		}
	}
}

// nanosAhead runs date under the shim and returns the nanoseconds it printed
// less true time's.
func nanosAhead(t *testing.T, env ...string) time.Duration {
	t.Helper()
	cmd := exec.Command("date", "+%s%N")
	cmd.Env = append(os.Environ(), env...)
	before := time.Now()
	out, err := cmd.Output()
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns - (before.UnixNano()+after.UnixNano())/2)
}

// A drifting clock gains rate × elapsed on top of the offset it had, as
// the shimmed process reads it, and taking the drift back leaves exactly
// the offset it started from, with no rate.
func TestShimDriftsTheWallClock(t *testing.T) {
	lib := build(t)
	file := filepath.Join(t.TempDir(), "clock.offset")
	if err := WriteOffset(file, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rate      int64
		lo, hi    time.Duration
		direction string
	}{{500_000_000, 1400 * time.Millisecond, 1700 * time.Millisecond, "fast"}, {-500_000_000, 300 * time.Millisecond, 600 * time.Millisecond, "slow"}} {
		undo, err := Drift(file, c.rate)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		ahead := nanosAhead(t, Env(lib, file)...)
		want, err := ReadOffset(file)
		if err != nil {
			t.Fatal(err)
		}
		if ahead < c.lo || ahead > c.hi || (ahead-want).Abs() > 100*time.Millisecond {
			t.Fatalf("after 1 s at 50%% %s from +1 s: date is %v ahead, the file says %v; want %v to %v", c.direction, ahead, want, c.lo, c.hi)
		}
		if err := undo(); err != nil {
			t.Fatal(err)
		}
		if st, _ := Read(file); st.Offset != time.Second || st.Rate != 0 {
			t.Fatalf("the drift taken back left %+v; want +1s and no rate", st)
		}
		if got := nanosAhead(t, Env(lib, file)...); (got - time.Second).Abs() > 100*time.Millisecond {
			t.Fatalf("the drift taken back, date is %v ahead; want 1s", got)
		}
	}
	if err := WriteOffset(file, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := Read(file); st != (State{}) {
		t.Fatalf("WriteOffset(0) left %+v", st)
	}
}

// The first format, the offset alone in 8 bytes, is still read by the shim
// and by Read.
func TestShimReadsTheOffsetOnlyFormat(t *testing.T) {
	lib := build(t)
	file := filepath.Join(t.TempDir(), "clock.offset")
	b := make([]byte, offsetSize)
	binary.NativeEndian.PutUint64(b, uint64(time.Hour))
	os.WriteFile(file, b, 0o644)
	if st, err := Read(file); err != nil || st != (State{Offset: time.Hour}) {
		t.Fatalf("Read = %+v, %v", st, err)
	}
	if got := nanosAhead(t, Env(lib, file)...); (got - time.Hour).Abs() > 2*time.Second {
		t.Fatalf("date is %v ahead, want an hour", got)
	}
}

func TestStateAt(t *testing.T) {
	st := State{Offset: time.Second, Rate: 20_000_000, Anchor: 1000}
	for mono, want := range map[int64]time.Duration{
		0:                           time.Second, // before the anchor: no drift yet
		1000 + int64(time.Second):   time.Second + 20*time.Millisecond,
		1000 + int64(100*time.Hour): time.Second + 2*time.Hour,
		1000 + 1500:                 time.Second + 30,
	} {
		if got := st.At(mono); got != want {
			t.Errorf("At(%d) = %v, want %v", mono, got, want)
		}
	}
}

func TestPathHonoursTheEnvironment(t *testing.T) {
	lib := filepath.Join(t.TempDir(), LibName)
	os.WriteFile(lib, nil, 0o644)
	t.Setenv(EnvLibrary, lib)
	if got, err := Path(); err != nil || got != lib {
		t.Fatalf("Path = %q, %v; want %q", got, err, lib)
	}
	t.Setenv(EnvLibrary, lib+".missing")
	if _, err := Path(); err == nil {
		t.Fatal("Path accepted a missing library")
	}
	if _, err := Find(); err == nil {
		t.Fatal("Find built a library although the environment names a missing one")
	}
}

func TestPathFindsTheModulesBuild(t *testing.T) {
	t.Setenv(EnvLibrary, "")
	want, err := filepath.Abs(filepath.Join("..", "..", "bin", LibName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want); err != nil {
		t.Skip("no bin/libclockshim.so (run `make build`)")
	}
	if got, err := Path(); err != nil || got != want {
		t.Fatalf("Path = %q, %v; want %q", got, err, want)
	}
}

func TestFindBuildsIntoTheCacheWithoutAModuleBuild(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	t.Setenv(EnvLibrary, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	if _, err := Path(); err == nil {
		t.Skip("a module build is reachable from the test binary")
	}
	buildMu.Lock()
	built = ""
	buildMu.Unlock()
	t.Cleanup(func() { built = "" })
	lib, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lib, os.Getenv("XDG_CACHE_HOME")) {
		t.Fatalf("Find = %s, want a build in the cache", lib)
	}
	if again, err := Find(); err != nil || again != lib {
		t.Fatalf("second Find = %q, %v; want %q", again, err, lib)
	}
}

// Moves that overlap, interleaved rather than nested, each take back only
// their own: a drift's undo leaves a shift made during it, and the clock
// is true again once every move is taken back.
func TestOverlappingMovesTakeBackTheirOwn(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clock.offset")
	if err := WriteOffset(file, 0); err != nil {
		t.Fatal(err)
	}
	undo, err := Drift(file, 200_000_000) // 20% fast
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := Shift(file, time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	st, err := Read(file)
	if err != nil || st.Rate != 0 || (st.Offset-time.Second).Abs() > time.Microsecond {
		t.Fatalf("after the drift was taken back: %+v, %v; want +1s, no rate", st, err)
	}
	if err := Shift(file, -time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := Read(file); st != (State{Offset: 0, Rate: 0, Anchor: st.Anchor}) {
		t.Fatalf("every move taken back, the clock is %+v; want exactly true time", st)
	}
}
