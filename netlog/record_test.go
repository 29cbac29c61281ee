package netlog

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// unmarshaled is what Read decoded a line into with json.Unmarshal before
// it read lines by hand.
type unmarshaled struct {
	Msg    string   `json:"msg"`
	Frame  *int     `json:"frame"`
	In     []uint64 `json:"in"`
	St     string   `json:"st"`
	Sum    string   `json:"sum"`
	Peer   *int     `json:"peer"`
	Local  string   `json:"local"`
	Remote string   `json:"remote"`
	To     int      `json:"to"`
}

// FuzzRecord: a line json.Valid accepts is read by hand as json.Unmarshal
// reads it: refused when Unmarshal refuses it, else to the same values.
func FuzzRecord(f *testing.F) {
	for _, s := range []string{
		`{"msg":"step","frame":4194303,"in":[0],"st":"C"}`,
		`{"us":16667,"msg":"step","frame":1,"resim":false,"in":[1,2],"st":"CP","sum":"00000000000003d1"}`,
		`{"msg":"desync","frame":100,"peer":0,"local":"01","remote":"02"}`,
		`{"msg":"final","to":2}`,
		`{"MSG":"st\u0065p","Frame":1,"frame":null,"to":3,"to":null,"in":[null,1],"ſt":"\ud83d\ude00x"}`,
		`{"msg":"send","in":[1,"x"]}`,
		`{"frame":"1"}`,
		`{"a":{"b":[1,{"c":"]}"}]},"in":[ 1 , 2 ]}`,
		`null`, `5`, `[]`, `"x"`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var want unmarshaled
		werr := json.Unmarshal(b, &want)
		var r record
		obj := r.parse(b)
		if werr != nil {
			require.True(t, !obj || r.err != nil, "Unmarshal: %v; read by hand: no error", werr)
			return
		}
		require.True(t, obj, "not an object")
		require.NoError(t, r.err)
		require.Equal(t, want.Msg, text(r.msg), "msg")
		require.Equal(t, want.St, text(r.st), "st")
		require.Equal(t, want.Sum, text(r.sum), "sum")
		require.Equal(t, want.Local, text(r.local), "local")
		require.Equal(t, want.Remote, text(r.remote), "remote")
		to, _, _ := integer(r.to)
		require.Equal(t, want.To, to, "to")
		for _, c := range []struct {
			name string
			want *int
			raw  []byte
		}{{"frame", want.Frame, r.frame}, {"peer", want.Peer, r.peer}} {
			n, present, ok := integer(c.raw)
			require.True(t, ok, c.name)
			require.Equal(t, c.want != nil, present, c.name)
			if present {
				require.Equal(t, *c.want, n, c.name)
			}
		}
		var in []uint64
		if r.in != nil {
			require.Equal(t, len(want.In), eachUint(r.in, func(u uint64) { in = append(in, u) }), "in")
		}
		require.Equal(t, len(want.In), len(in), "in")
		for i := range in {
			require.Equal(t, want.In[i], in[i], "in[%d]", i)
		}
		if msg(r.msg) != "?" {
			require.Equal(t, want.Msg, msg(r.msg))
		}
	})
}
