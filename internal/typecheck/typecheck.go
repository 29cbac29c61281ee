// Package typecheck gives go/types the compiled packages of this workspace:
// it runs `go list -export -deps` once and imports each package from the
// export data the go command built for it. It uses the standard library
// only, so the guards that need type information (the API listing of
// internal/apilist, the compiled doc blocks of internal/doccheck) add no
// module to the library's graph.
package typecheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Package is what `go list` says of one package.
type Package struct {
	ImportPath string
	Name       string
	// Module is the path of the module that holds it; empty in the
	// standard library.
	Module string
	// Root is true for a package the patterns named, false for a
	// dependency of one.
	Root bool
}

// Loaded is a set of compiled packages and their dependencies.
type Loaded struct {
	// Fset holds the positions of everything imported or checked with
	// Importer.
	Fset *token.FileSet
	// Packages are the patterns' packages and their dependencies, in the
	// order go list gives them (dependencies first).
	Packages []Package
	export   map[string]string
	imp      types.ImporterFrom
}

// Load runs `go list -export -deps` on patterns in dir (so that the module
// or workspace around dir decides what they are) and returns the packages
// it names. Building the export data is a compilation, which the build
// cache makes cheap after the first.
func Load(dir string, patterns ...string) (*Loaded, error) {
	l := &Loaded{Fset: token.NewFileSet(), export: map[string]string{}}
	err := goList(dir, patterns, true, func(p Package, export string) {
		l.Packages = append(l.Packages, p)
		if export != "" {
			l.export[p.ImportPath] = export
		}
	})
	if err != nil {
		return nil, err
	}
	l.imp = importer.ForCompiler(l.Fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := l.export[path]
		if !ok {
			return nil, fmt.Errorf("%s: not among the packages loaded (add it to the patterns)", path)
		}
		return os.Open(file)
	}).(types.ImporterFrom)
	return l, nil
}

// goList runs go list on patterns in dir, with -export -deps if export,
// and calls f with each package and its export data file.
func goList(dir string, patterns []string, export bool, f func(p Package, export string)) error {
	args := []string{"list", "-json=ImportPath,Name,Export,DepOnly,Module,Error"}
	if export {
		args = append(args, "-export", "-deps")
	}
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Name, Export string
			DepOnly                  bool
			Module                   *struct{ Path string }
			Error                    *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("go list: %v", err)
		}
		if p.Error != nil {
			return fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkg := Package{ImportPath: p.ImportPath, Name: p.Name, Root: !p.DepOnly}
		if p.Module != nil {
			pkg.Module = p.Module.Path
		}
		f(pkg, p.Export)
	}
}

// Importer imports the loaded packages from their export data; a package
// imported twice is the same *types.Package.
func (l *Loaded) Importer() types.Importer { return l.imp }

// Import returns the exported declarations of a loaded package.
func (l *Loaded) Import(path string) (*types.Package, error) { return l.imp.Import(path) }

// List runs `go list` on patterns in dir, without compiling anything.
func List(dir string, patterns ...string) ([]Package, error) {
	var pkgs []Package
	err := goList(dir, patterns, false, func(p Package, _ string) { pkgs = append(pkgs, p) })
	return pkgs, err
}
