package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// NewServer browses a store: the home page lists its runs newest first
// with their verdicts, and every file under the store is served as it is,
// so a run's index.html and its relative links work. Every file is opened
// through an os.Root of the store, so nothing outside it is served: a path
// with a ".." segment is refused, and a symlink that leads outside the
// store is not followed (store/latest, which points inside, is).
func NewServer(store string) (http.Handler, error) {
	root, err := os.OpenRoot(store)
	if err != nil {
		return nil, fmt.Errorf("the store %s cannot be opened (run a scenario first, or pass --store): %w", store, err)
	}
	abs, err := filepath.Abs(store)
	if err != nil {
		abs = store
	}
	return &server{root: root, fsys: root.FS(), name: abs}, nil
}

type server struct {
	root *os.Root
	fsys fs.FS
	name string // the store's path, for the home page
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	// The handler is not behind a ServeMux, which would answer a ".."
	// path with a redirect to its cleaned form; like http.FileServer it
	// refuses one.
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
		http.Error(w, "paths may not leave the store", http.StatusBadRequest)
		return
	}
	if p == "/" {
		s.home(w, r)
		return
	}
	name := strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
	if !fs.ValidPath(name) {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	f, err := s.root.Open(name)
	if err != nil {
		status := http.StatusForbidden // a symlink out of the store, say
		if errors.Is(err, fs.ErrNotExist) {
			status = http.StatusNotFound
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "cannot open", http.StatusForbidden)
		return
	}
	if st.IsDir() {
		if !strings.HasSuffix(p, "/") {
			http.Redirect(w, r, path.Base(p)+"/", http.StatusMovedPermanently)
			return
		}
		s.dir(w, p, name)
		return
	}
	if !st.Mode().IsRegular() {
		http.Error(w, "not a file", http.StatusForbidden)
		return
	}
	switch path.Ext(name) {
	case ".jsonl", ".log", ".txt", ".conf":
		// Shown in the browser rather than downloaded.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	http.ServeContent(w, r, st.Name(), st.ModTime(), f)
}

// storeRun is one run on the home page.
type storeRun struct {
	Name, Dir, Stamp string
	Verdict          string
	Summary          string
	Seed             int64
	Latest           bool
	Files            []fileLink
	HasIndex         bool
	stamp            string
	suffix           int
}

type storePage struct {
	Store  string
	Filter string
	Names  []string
	Runs   []storeRun
	Total  int
}

func (s *server) home(w http.ResponseWriter, r *http.Request) {
	runs := s.runs()
	page := storePage{Store: s.name, Filter: strings.TrimSpace(r.URL.Query().Get("name")), Total: len(runs)}
	seen := map[string]bool{}
	for _, run := range runs {
		if !seen[run.Name] {
			seen[run.Name] = true
			page.Names = append(page.Names, run.Name)
		}
		if page.Filter == "" || strings.Contains(strings.ToLower(run.Name), strings.ToLower(page.Filter)) {
			page.Runs = append(page.Runs, run)
		}
	}
	sort.Strings(page.Names)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := templates.ExecuteTemplate(w, "store.html", page); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// runs finds store/<name>/<stamp>/ directories that hold results.json,
// newest first.
func (s *server) runs() []storeRun {
	latest, _ := s.root.Readlink("latest")
	latest = path.Clean(filepath.ToSlash(latest))
	names, _ := fs.ReadDir(s.fsys, ".")
	var runs []storeRun
	for _, n := range names {
		if !n.IsDir() || strings.HasPrefix(n.Name(), ".") || n.Name() == "suites" {
			// store/latest is a symlink and is listed through its target;
			// suite reports are reached through /suites/.
			continue
		}
		stamps, _ := fs.ReadDir(s.fsys, n.Name())
		for _, st := range stamps {
			if !st.IsDir() {
				continue
			}
			dir := path.Join(n.Name(), st.Name())
			res, err := readResults(s.fsys, dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			run := storeRun{Name: n.Name(), Dir: "/" + url.PathEscape(n.Name()) + "/" + url.PathEscape(st.Name()) + "/",
				Stamp: st.Name(), Verdict: checker.Unknown.String(), Latest: dir == latest}
			run.stamp, run.suffix = splitStamp(st.Name())
			if t, err := time.Parse("20060102T150405", run.stamp); err == nil {
				run.Stamp = t.Format("2006-01-02 15:04:05")
				if run.suffix > 1 {
					run.Stamp += " #" + strconv.Itoa(run.suffix)
				}
			}
			if err != nil {
				run.Summary = "results.json unreadable: " + err.Error()
			} else {
				run.Verdict, run.Seed, run.Summary = res.Valid.String(), res.Seed, headline(res)
			}
			if _, err := fs.Stat(s.fsys, path.Join(dir, "index.html")); err == nil {
				run.HasIndex = true
			}
			run.Files = runFiles(s.fsys, dir)
			runs = append(runs, run)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if a.stamp != b.stamp {
			return a.stamp > b.stamp
		}
		if a.suffix != b.suffix {
			return a.suffix > b.suffix
		}
		return a.Name < b.Name
	})
	return runs
}

// splitStamp splits "20261129T120001-2" into its time and its same-second
// counter (1 when there is none).
func splitStamp(name string) (string, int) {
	stamp, n, ok := strings.Cut(name, "-")
	if !ok {
		return name, 1
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return name, 1
	}
	return stamp, i
}

type dirEntry struct {
	Name, Href, Size, Modified string
	IsDir                      bool
}

type dirPage struct {
	Path    string
	Up      string
	Index   bool
	Entries []dirEntry
}

func (s *server) dir(w http.ResponseWriter, urlPath, name string) {
	entries, err := fs.ReadDir(s.fsys, name)
	if err != nil {
		http.Error(w, "cannot list", http.StatusForbidden)
		return
	}
	page := dirPage{Path: urlPath, Up: "../"}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		d := dirEntry{Name: e.Name(), Href: url.PathEscape(e.Name()), Modified: info.ModTime().Format("2006-01-02 15:04:05")}
		if e.IsDir() || info.Mode()&os.ModeSymlink != 0 {
			if st, err := fs.Stat(s.fsys, path.Join(name, e.Name())); err == nil && st.IsDir() {
				d.IsDir, d.Href, d.Name = true, d.Href+"/", d.Name+"/"
			}
		}
		if !d.IsDir {
			d.Size = size(info.Size())
		}
		if e.Name() == "index.html" {
			page.Index = true
		}
		page.Entries = append(page.Entries, d)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := templates.ExecuteTemplate(w, "dir.html", page); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// readResults reads dir/results.json from fsys.
func readResults(fsys fs.FS, dir string) (Results, error) {
	var res Results
	b, err := fs.ReadFile(fsys, path.Join(dir, "results.json"))
	if err != nil {
		return res, err
	}
	return res, json.Unmarshal(b, &res)
}
