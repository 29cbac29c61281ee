package relay

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/pion/turn/v4"
)

// A credential's username is "expiry:match:seat": the expiry in Unix
// seconds first, as in the TURN REST scheme, then the seat it is for. A
// username of the expiry alone is a credential for no seat (the soak's,
// and a relay without a lobby's). The password is the base64 of the
// HMAC-SHA1 of the whole username under a shared secret, as
// turn.GenerateLongTermTURNRESTCredentials makes it.

// maxSeat bounds the seat number a username may name.
const maxSeat = 255

// credential is what a username says.
type credential struct {
	username string
	expires  time.Time
	match    string // "" when the credential is for no seat
	seat     int
}

// scoped says whether the credential is for a seat.
func (c credential) scoped() bool { return c.match != "" }

// quotaKey is what the allocation quota counts per: the seat, whatever
// the expiry (every GET of the match mints a new username for it), or the
// username of a credential for no seat.
func (c credential) quotaKey() string {
	if c.scoped() {
		return c.match + ":" + strconv.Itoa(c.seat)
	}
	return c.username
}

// parseUsername reads a username; false when it is none of ours.
func parseUsername(u string) (credential, bool) {
	parts := strings.Split(u, ":")
	if len(parts) != 1 && len(parts) != 3 {
		return credential{}, false
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || exp <= 0 {
		return credential{}, false
	}
	c := credential{username: u, expires: time.Unix(exp, 0)}
	if len(parts) == 3 {
		seat, err := strconv.Atoi(parts[2])
		if err != nil || parts[1] == "" || seat < 0 || seat > maxSeat || strconv.Itoa(seat) != parts[2] {
			return credential{}, false
		}
		c.match, c.seat = parts[1], seat
	}
	return c, true
}

// Credentials derives the username and password of a credential valid
// until expires from secret: for seat of match, or for no seat when
// match is "". A relay with that secret among its Config.Secrets accepts
// it.
func Credentials(secret string, expires time.Time, match string, seat int) (username, password string, err error) {
	if secret == "" {
		return "", "", errors.New("relay: empty secret")
	}
	username = strconv.FormatInt(expires.Unix(), 10)
	if match != "" {
		if strings.Contains(match, ":") || seat < 0 || seat > maxSeat {
			return "", "", errors.New("relay: a match with ':' or a seat out of range")
		}
		username += ":" + match + ":" + strconv.Itoa(seat)
	}
	return username, sign(secret, username), nil
}

// sign is the password of username under secret.
func sign(secret, username string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// authKey is the long-term key (RFC 5389) of username under secret.
func authKey(username, realm, secret string) []byte {
	return turn.GenerateAuthKey(username, realm, sign(secret, username))
}

// checkSecrets is the list Config.Secrets and Server.SetSecrets take.
func checkSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("relay: no secret")
	}
	for _, s := range secrets {
		if s == "" {
			return errors.New("relay: an empty secret")
		}
	}
	return nil
}
