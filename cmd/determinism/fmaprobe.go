package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// noFMACPU is the CPU model qemu-x86_64-static emulates for the "no FMA"
// column: Nehalem (2008) has SSE4.2 and no AVX, FMA or AVX2, so a
// GOAMD64=v1 build runs and whatever chooses FMA at run time (math.Exp's
// assembly: useFMA) takes its other path.
const noFMACPU = "Nehalem"

// The FMA probe is a program of its own (a module with no requirements):
// "cpuid" prints CPUID leaf 1's FMA bit; "fma" computes x*x+z with
// VFMADD231SD, the fused instruction, on operands whose fused result
// (2⁻⁶⁰) is not the twice-rounded one (0): on a CPU without FMA the
// instruction faults (SIGILL). The Go compiler never emits it for a
// GOAMD64=v1 build, so the probe is written in assembly.
const (
	probeGo = `// Command fmaprobe tells whether this CPU has FMA (cmd/determinism).
package main

import (
	"fmt"
	"os"
)

func cpuidFMA() bool
func vfmadd(x, y, z float64) float64

var operands = struct{ x, z float64 }{1 + 0x1p-30, -(1 + 0x1p-29)}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "fma" {
		fmt.Println("fused:", vfmadd(operands.x, operands.x, operands.z), "unfused:", operands.x*operands.x+operands.z)
		return
	}
	fmt.Println("cpuid-fma:", cpuidFMA())
}
`
	probeAsm = `#include "textflag.h"

// func cpuidFMA() bool
TEXT ·cpuidFMA(SB),NOSPLIT,$0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $12, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func vfmadd(x, y, z float64) float64
TEXT ·vfmadd(SB),NOSPLIT,$0-32
	MOVSD x+0(FP), X0
	MOVSD y+8(FP), X1
	MOVSD z+16(FP), X2
	VFMADD231SD X1, X0, X2
	MOVSD X2, ret+24(FP)
	RET
`
)

// checkNoFMA builds the FMA probe in work and runs it under emu (the
// emulator and its flags) twice: CPUID must say no FMA, and the fused
// instruction must fault; first, under -cpu max, the probe must see FMA
// and a fused result that differs from the twice-rounded one. It returns what it checked, or why the model
// has FMA (or could not be checked).
func checkNoFMA(ctx context.Context, emu []string, work string, timeout time.Duration) (string, error) {
	dir := filepath.Join(work, "fmaprobe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, src := range map[string]string{"go.mod": "module fmaprobe\n\ngo 1.21\n", "main.go": probeGo, "probe_amd64.s": probeAsm} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, "fmaprobe")
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := command(bctx, "go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOAMD64=v1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("the FMA probe does not build: %v\n%s", err, tail(string(out), 10))
	}
	runOn := func(emu []string, arg string) (string, error) {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		out, err := command(rctx, emu[0], append(append(append([]string{}, emu[1:]...), bin), arg)...).CombinedOutput()
		return string(out), err
	}
	run := func(arg string) (string, error) { return runOn(emu, arg) }
	// The control: on qemu's model with every feature, the probe must see
	// FMA and the fused result differ from the twice-rounded one, or its
	// "no FMA" below would prove nothing.
	control := []string{emu[0], "-cpu", "max"}
	out, err := runOn(control, "fma")
	if err != nil || !strings.Contains(out, "fused: 8.673617379884035e-19 unfused: 0") {
		return "", fmt.Errorf("the FMA probe does not see FMA under %s either (%v: %s): it cannot tell a CPU without FMA", strings.Join(control, " "), err, strings.TrimSpace(tail(out, 2)))
	}
	out, err = run("cpuid")
	switch {
	case err != nil:
		return "", fmt.Errorf("the FMA probe does not run under %s: %v\n%s", strings.Join(emu, " "), err, tail(out, 5))
	case !strings.Contains(out, "cpuid-fma: false"):
		return "", fmt.Errorf("the CPU that %s emulates has FMA (the probe printed %q): this column would not be without FMA", strings.Join(emu, " "), strings.TrimSpace(out))
	}
	out, err = run("fma")
	if err == nil || !strings.Contains(out, "SIGILL") {
		return "", fmt.Errorf("under %s the fused multiply-add did not fault (%v): %s", strings.Join(emu, " "), err, strings.TrimSpace(tail(out, 2)))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", ctx.Err()
	}
	return fmt.Sprintf("under %s, CPUID has no FMA and VFMADD231SD faults; under -cpu max, it gives the fused result", strings.Join(emu[1:], " ")), nil
}
