package apilist

import (
	"go/ast"
	"go/parser"
	"go/types"
	"strings"
	"testing"

	"github.com/rewindgg/rewind/internal/typecheck"
)

const src = `package p

import "io"

const (
	Big       = 1 << 40
	Name      = "p"
	Kind Mode = 2
	hidden    = 1
)

type Mode uint8

func (Mode) String() string { return "" }

var Default, other io.Reader

type Config struct {
	Players int
	Out     io.Writer
	Hook    func(n int, names ...string) (ok bool, err error)
	C       <-chan struct{}
	Inline  struct{ A, b int }
	private bool
	Base
}

type Base struct{ ID uint64 }

func (*Base) Reset() {}

type Game interface {
	io.Closer
	Step(frame int32, in []byte)
	hidden()
}

type Handle[T any] struct{ off int }

func (h Handle[T]) Get(p *T) *T { return p }

type Number interface{ ~int | ~float64 }

func Sum[N Number](ns ...N) N { var s N; return s }

type Alias = Config

func New(Config) (*Config, error) { return nil, nil }

func unexported() {}
`

// TestLines checks the listing's format on a package with one of each kind
// of declaration.
func TestLines(t *testing.T) {
	loaded, err := typecheck.Load(root, "io")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(loaded.Fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: loaded.Importer()}).Check("example.com/mod/p", loaded.Fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `pkg p, const Big = 1099511627776
pkg p, const Big untyped int
pkg p, const Kind = 2
pkg p, const Kind Mode
pkg p, const Name = "p"
pkg p, const Name untyped string
pkg p, func New(Config) (*Config, error)
pkg p, func Sum[N Number](...N) N
pkg p, method (*Base) Reset()
pkg p, method (*Config) Reset()
pkg p, method (Handle[T]) Get(*T) *T
pkg p, method (Mode) String() string
pkg p, type Alias = Config
pkg p, type Base struct
pkg p, type Base struct, ID uint64
pkg p, type Config struct
pkg p, type Config struct, C <-chan struct{}
pkg p, type Config struct, Hook func(int, ...string) (bool, error)
pkg p, type Config struct, Inline struct{ A int; b int }
pkg p, type Config struct, Out io.Writer
pkg p, type Config struct, Players int
pkg p, type Config struct, embedded Base
pkg p, type Game interface { Close, Step, unexported methods }
pkg p, type Game interface, Close() error
pkg p, type Game interface, Step(int32, []byte)
pkg p, type Handle[T any] struct
pkg p, type Mode uint8
pkg p, type Number interface{ ~int | ~float64 }
pkg p, var Default io.Reader`
	if got := strings.Join(Lines(pkg, "example.com/mod/"), "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if n := Exported(pkg); n != 13 {
		t.Errorf("Exported = %d, want 13", n)
	}
}
