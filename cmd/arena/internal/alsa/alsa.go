//go:build linux && !android && cgo

package alsa

// #cgo pkg-config: alsa
// #include <alsa/asoundlib.h>
//
// static void arena_quiet(const char *file, int line, const char *function, int err, const char *fmt, ...) {}
//
// static int arena_probe(const char *name) {
// 	snd_lib_error_set_handler(arena_quiet);
// 	snd_pcm_t *pcm;
// 	int err = snd_pcm_open(&pcm, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK);
// 	if (err == 0) {
// 		snd_pcm_close(pcm);
// 	}
// 	snd_lib_error_set_handler(NULL);
// 	return err;
// }
import "C"

import (
	"fmt"
	"unsafe"
)

// Probe opens and closes ALSA's default playback device, with ALSA's own
// error messages silenced, and returns why it does not open (nil if it
// does).
func Probe() error {
	name := C.CString("default")
	defer C.free(unsafe.Pointer(name))
	if err := C.arena_probe(name); err < 0 {
		return fmt.Errorf("ALSA cannot open its default device: %s", C.GoString(C.snd_strerror(err)))
	}
	return nil
}
