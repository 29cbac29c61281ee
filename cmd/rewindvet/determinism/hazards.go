package determinism

import (
	"fmt"
	"go/types"
	"strings"
)

//go:generate go run ../internal/mathscan/mkmathlist -o mathfuncs.go

// mathFunc is an entry of the generated mathFuncs: the GOARCHes on which
// a math function reaches assembly, and those on which it reaches Go code
// with multiply-adds the compiler may fuse.
type mathFunc struct{ asm, fma string }

// A kind of hazard, with why it breaks determinism and what to do instead
// (the trap table of docs/integration.md, section 2).
type kind struct {
	name, why, instead string
}

var (
	kMapRange = &kind{"maprange",
		"iteration order is randomised per run",
		"use an array, or range over slices.Sorted(maps.Keys(m))"}
	kTime = &kind{"time",
		"the wall clock differs per machine and per re-simulation",
		"count frames: f ticks of 1/60 s"}
	kRand = &kind{"rand",
		"the global generator is shared, seeded per process and not in the arena",
		"keep a generator's state in the arena, seeded from the match parameters"}
	kRandMethod = &kind{"rand",
		"a *rand.Rand keeps its state on the heap, outside the arena, so a rollback does not rewind it",
		"keep the generator's state in the arena (an rng.Rand or a rand.PCG in the world)"}
	kCryptoRand = &kind{"cryptorand",
		"it differs on every machine and every call",
		"keep a generator's state in the arena, seeded from the match parameters"}
	kGoroutine = &kind{"goroutine",
		"goroutine scheduling order is not deterministic",
		"simulate on one goroutine"}
	kChannel = &kind{"channel",
		"it waits on other goroutines, whose timing is not deterministic",
		"simulate on one goroutine, without channels"}
	kSelect = &kind{"select",
		"select picks a random ready case",
		"simulate on one goroutine, without channels"}
	kFMA = &kind{"fma",
		"the compiler may fuse it into one FMA instruction (" + fmaArches + "), which rounds differently",
		"convert the product, float64(x*y), or use fixed point"}
	kMath = &kind{"math",
		"its last bit may differ between platforms",
		"use fixed point (package fixed: Sin, Cos, Atan2, Sqrt) or a table"}
	kGlobal = &kind{"globalvar",
		"it is outside the arena, so a rollback does not restore it",
		"keep it in the arena, or make it a read-only table initialised at its declaration"}
	kUnsafe = &kind{"unsafe",
		"memory layout and addresses differ between platforms and between the live state and a snapshot",
		"use typed values in the arena"}
	kAllow = &kind{"allow",
		"an exemption must say why the code is deterministic",
		"write //rewind:allow <reason>"}
)

// timeFuncs are the functions of package time that read or wait on the
// wall clock.
var timeFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true,
	"After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true, "Sleep": true,
}

// randConstructors are the top-level functions of math/rand and
// math/rand/v2 that only build a generator from a seed: deterministic.
var randConstructors = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
}

// sorters are the functions of package slices that turn an iterator into a
// sorted slice: maps.Keys inside one is deterministic.
var sorters = map[string]bool{"Sorted": true, "SortedFunc": true, "SortedStableFunc": true}

// identity returns the hazard of using the standard library's fn, if it
// is one of the listed ones. why and instead override the kind's when not
// empty.
func identity(fn *types.Func) (k *kind, noun, why string, ok bool) {
	pkg := fn.Pkg()
	if pkg == nil {
		return nil, "", "", false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil {
		return nil, "", "", false
	}
	path, name := pkg.Path(), fn.Name()
	if recv := sig.Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := types.Unalias(t).(*types.Named)
		if !ok || (path != "math/rand" && path != "math/rand/v2") {
			return nil, "", "", false
		}
		if tn := n.Obj().Name(); tn == "Rand" || tn == "Zipf" {
			return kRandMethod, fmt.Sprintf("(*rand.%s).%s", tn, name), "", true
		}
		return nil, "", "", false
	}
	switch path {
	case "time":
		if timeFuncs[name] {
			return kTime, "time." + name, "", true
		}
	case "math/rand", "math/rand/v2":
		if !randConstructors[name] {
			return kRand, "rand." + name, "", true
		}
	case "crypto/rand":
		return kCryptoRand, "crypto/rand." + name, "", true
	case "math":
		if m, ok := mathFuncs[name]; ok {
			return kMath, "math." + name, mathWhy(m), true
		}
	}
	return nil, "", "", false
}

// mathWhy says where a math function's result depends on the platform.
func mathWhy(m mathFunc) string {
	var parts []string
	if m.asm != "" {
		parts = append(parts, "it is assembly on "+m.asm)
	}
	if m.fma != "" {
		parts = append(parts, "its Go code has multiply-adds the compiler may fuse on "+m.fma)
	}
	return strings.Join(parts, " and ") + ", so its last bit may differ between platforms"
}
