package wire

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
)

// The keys of a link. Each machine draws an ephemeral X25519 key pair per
// match and sends the public half in its handshake. Once a peer has proved
// that it receives at its address (it echoed our fresh nonce), both sides
// compute the shared secret and derive, with HKDF-SHA256, one AES-128 key
// per direction. The derivation binds the session id, both nonces, both
// public keys and the digest of the configuration the machines agreed on;
// a Secret from the lobby, when set, is the HKDF salt, so that a machine in
// the middle that does not know it derives other keys and every datagram it
// forwards fails its MAC. Only standard-library primitives are used.

// DigestSize is the size of the agreed configuration's digest (SHA-256).
const DigestSize = sha256.Size

// KeySize is the size of an X25519 public key.
const KeySize = 32

// ErrKey is returned for a peer public key that gives no shared secret (a
// low-order point) or a link whose two nonces are equal.
var ErrKey = errors.New("wire: unusable key exchange")

// KeyShare is one machine's ephemeral key pair for a match.
type KeyShare struct {
	priv *ecdh.PrivateKey
	pub  [KeySize]byte
}

// NewKeyShare draws a key pair from rand (crypto/rand in play; a seeded
// source makes a match reproducible).
func NewKeyShare(rand io.Reader) (*KeyShare, error) {
	var seed [KeySize]byte
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		return nil, err
	}
	priv, err := ecdh.X25519().NewPrivateKey(seed[:])
	if err != nil {
		return nil, err
	}
	k := &KeyShare{priv: priv}
	copy(k.pub[:], priv.PublicKey().Bytes())
	return k, nil
}

// Public returns the public key to send in the handshake.
func (k *KeyShare) Public() [KeySize]byte { return k.pub }

// Link is what both ends of a link must feed the key derivation alike.
type Link struct {
	Session      uint64
	Ours, Theirs uint64 // the handshake nonces
	TheirKey     [KeySize]byte
	Digest       [DigestSize]byte // of the agreed configuration
	Secret       []byte           // Config.Secret; empty for none
}

// Keys derives the link's two direction keys: the one we seal with and
// the one we open the peer's datagrams with.
func (k *KeyShare) Keys(l Link) (send, recv cipher.AEAD, err error) {
	if l.Ours == l.Theirs {
		return nil, nil, ErrKey
	}
	theirs, err := ecdh.X25519().NewPublicKey(l.TheirKey[:])
	if err != nil {
		return nil, nil, ErrKey
	}
	shared, err := k.priv.ECDH(theirs)
	if err != nil {
		return nil, nil, ErrKey // a low-order point
	}
	// The side with the lower nonce is "lo"; both order the transcript so.
	loN, hiN, loK, hiK := l.Ours, l.Theirs, k.pub, l.TheirKey
	if l.Ours > l.Theirs {
		loN, hiN, loK, hiK = hiN, loN, hiK, loK
	}
	info := make([]byte, 0, 128)
	info = append(info, "rewind/1 link keys"...)
	info = binary.BigEndian.AppendUint64(info, l.Session)
	info = binary.BigEndian.AppendUint64(info, loN)
	info = binary.BigEndian.AppendUint64(info, hiN)
	info = append(append(info, loK[:]...), hiK[:]...)
	info = append(info, l.Digest[:]...)
	okm, err := hkdf.Key(sha256.New, shared, l.Secret, string(info), 32)
	if err != nil {
		return nil, nil, err
	}
	loHi, hiLo := okm[:16], okm[16:]
	if l.Ours > l.Theirs {
		loHi, hiLo = hiLo, loHi
	}
	if send, err = newAEAD(loHi); err != nil {
		return nil, nil, err
	}
	if recv, err = newAEAD(hiLo); err != nil {
		return nil, nil, err
	}
	return send, recv, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
