// Command seats is the test plugin of resumption (host resume_test.go): it
// tells every client what the module saw of it — "admitted NAME", "left
// NAME", "resumed NAME" — in a "seat" message, so a test sees that a
// client whose connection dropped and came back was resumed, not admitted
// again.
package main

import (
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

const seatMsg = 1400

type seats struct {
	plugin.Base
	h module.Host
}

func (s *seats) Manifest() module.Manifest {
	return module.Manifest{Name: "seats", Version: "1",
		Messages: []wire.Schema{{ID: seatMsg, Name: "seat", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered,
			MinLen: 2, MaxLen: 66, StringFieldOffset: 0, RequiresAdmitted: true}}}
}

func (s *seats) Load(h module.Host) error {
	s.h = h
	return nil
}

func (s *seats) tell(c module.ClientInfo, what string) {
	w := wire.NewWriter(nil)
	w.Str(what + " " + c.Name)
	_ = s.h.Send(c.ID, seatMsg, w.Bytes())
}

func (s *seats) OnAdmitted(c module.ClientInfo) { s.tell(c, "admitted") }

// OnResumed is plugin.ResumeHandler's.
func (s *seats) OnResumed(c module.ClientInfo) { s.tell(c, "resumed") }

func main() { plugin.Serve(&seats{}) }
