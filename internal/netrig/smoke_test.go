package netrig

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	r := New(t, Config{NAT: true})
	echo, err := r.Server.StartEcho(7000)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := r.Client(0).ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := Probe(context.Background(), conn, echo, ProbeConfig{Count: 20})
	t.Logf("%+v err %v", res, err)
	t.Logf("%s", Summarize(res.RTTs))
	t.Logf("%+v", r.Stats(0))
}
