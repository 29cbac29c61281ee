package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"strings"
)

// envPrefix starts the environment variable of every flag: -turn-secret-file
// is RENDEZVOUS_TURN_SECRET_FILE.
const envPrefix = "RENDEZVOUS_"

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applySettings gives every flag of fl that the command line did not set
// its value from the environment (envName; set and empty is a value),
// else from the config file:
// configPath, or the RENDEZVOUS_CONFIG variable's file when configPath is
// empty. The file has one setting a line, a flag's name and its value
// ("max-matches 5000" or "max-matches = 5000"; a value runs to the end of
// its line), blank lines and lines starting with # aside. An unknown name,
// a name given twice or a value its flag refuses is an error that says
// where it came from.
func applySettings(fl *flag.FlagSet, configPath string, lookupEnv func(string) (string, bool)) error {
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fl.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		if v, ok := lookupEnv(envName(f.Name)); ok {
			if err := fl.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("environment %s: %w", envName(f.Name), err))
			}
			set[f.Name] = true
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if configPath == "" {
		configPath, _ = lookupEnv(envName("config"))
	}
	if configPath == "" {
		return nil
	}
	f, err := os.Open(configPath)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	return readSettings(fl, configPath, f, set)
}

// readSettings sets the flags of fl that the file r names and set does not.
func readSettings(fl *flag.FlagSet, path string, r io.Reader, set map[string]bool) error {
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value := text, ""
		if i := strings.IndexAny(text, "= \t"); i >= 0 {
			name, value = text[:i], strings.TrimSpace(text[i:])
			value = strings.TrimSpace(strings.TrimPrefix(value, "="))
		}
		name = strings.TrimPrefix(name, "-")
		where := fmt.Sprintf("%s:%d", path, line)
		if fl.Lookup(name) == nil || name == "config" {
			return fmt.Errorf("%s: no setting named %q (the names are the flags', without the dash: rendezvous -h lists them)", where, name)
		}
		if first, ok := seen[name]; ok {
			return fmt.Errorf("%s: %s is already set on line %d", where, name, first)
		}
		seen[name] = line
		if set[name] {
			continue // the command line or the environment wins
		}
		if err := fl.Set(name, value); err != nil {
			return fmt.Errorf("%s: %s: %w", where, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// version is the binary's module version and, when it was built from a
// checkout, the commit.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "rendezvous (no build information)"
	}
	v := "rendezvous " + info.Main.Version
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " commit " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += " (modified)"
			}
		}
	}
	return v + " " + info.GoVersion
}

// relayUnreachable says whether a relay listening on addr advertises
// publicIP that only this host can reach: a loopback address while it
// listens on every address (the default -public-ip with -turn :3478, as a
// public host is likely to be started by mistake).
func relayUnreachable(addr net.Addr, publicIP string) bool {
	ip, err := netip.ParseAddr(publicIP)
	if err != nil || !ip.IsLoopback() {
		return false
	}
	ua, ok := addr.(*net.UDPAddr)
	return ok && ua.IP.IsUnspecified()
}
