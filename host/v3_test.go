package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func dialV3(t *testing.T, srv *host.Server, name string) (*netstack.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Protocol: 3})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestV3ClientOnOneMatchServer: a v3 client of a server that runs one
// match plays in its one room without the room messages (the host never
// even tries to send them: nothing is refused or skipped with a warning),
// gets the v4 clients' RoomChat as ChatMessage, and chats both ways.
func TestV3ClientOnOneMatchServer(t *testing.T) {
	srv, _ := startHost(t, nil)
	v4 := newRoomClient(t, srv, "new")
	v4.await("its RoomState", func(m netstack.Message) bool { return m.Header.Type == gamemsg.TypeRoomState })
	old, err := dialV3(t, srv, "old")
	if err != nil {
		t.Fatal(err)
	}
	if old.Protocol() != 3 {
		t.Fatalf("session protocol %d, want 3", old.Protocol())
	}
	v4.event(gamemsg.RoomJoined, old.ID())

	v4.send(gamemsg.TypeRoomChat, gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Scope: gamemsg.ChatRoom, Text: "room line"}))
	v4.send(gamemsg.TypeRoomChat, gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Scope: gamemsg.ChatGlobal, Text: "global line"}))
	v4.send(gamemsg.TypeChatMessage, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "plain line"}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		m, err := old.Receive(ctx)
		if err != nil {
			t.Fatalf("the v3 client got %q, then: %v", got, err)
		}
		if !wire.InProtocol(3, m.Header.Type) {
			t.Fatalf("the v3 client was sent %s (%d)", m.Header.Type, m.Header.Type)
		}
		if m.Header.Type == gamemsg.TypeChatMessage {
			cm, err := gamemsg.ParseChatMessage(m.Payload)
			if err != nil || cm.Sender != "new" {
				t.Fatalf("chat %+v, %v", cm, err)
			}
			got = append(got, cm.Text)
		}
	}
	if strings.Join(got, "|") != "room line|global line|plain line" {
		t.Fatalf("the v3 client's chat: %q", got)
	}
	if err := old.Send(gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "from v3"})); err != nil {
		t.Fatal(err)
	}
	v4.await("the v3 client's chat", func(m netstack.Message) bool {
		cm, err := gamemsg.ParseChatMessage(m.Payload)
		return m.Header.Type == gamemsg.TypeChatMessage && err == nil && cm.Text == "from v3"
	})
	if st := srv.Net().Stats(); st.NotInProtocol != 0 {
		t.Errorf("the host tried %d sends a v3 client's protocol does not define", st.NotInProtocol)
	}
	if st := old.Stats(); st.MalformedDropped != 0 || st.MessagesRefused != 0 {
		t.Errorf("the v3 client dropped %d, refused %d messages", st.MalformedDropped, st.MessagesRefused)
	}
}

// TestLobbyRefusesV3: a v3 client cannot send the room requests that are
// the only way out of a lobby, so a server with rooms refuses it at the
// hello, saying why; a v4 client is served.
func TestLobbyRefusesV3(t *testing.T) {
	srv := startLobby(t, []string{"entities"}, nil, nil)
	_, err := dialV3(t, srv, "old")
	var he *netstack.HandshakeError
	if !errors.As(err, &he) || he.Code != netstack.HandshakeRejected || he.Reason != wire.RejectProtocolTooOld || !strings.Contains(he.Detail, "rooms need protocol v4") {
		t.Fatalf("v3 Dial of a lobby: %v, want ProtocolTooOld saying rooms need v4", err)
	}
	if !strings.Contains(srv.Exposure(), "v3 refused (a lobby of rooms needs protocol v4)") {
		t.Errorf("Exposure() = %q", srv.Exposure())
	}
	dialHost(t, srv, "new")
}
