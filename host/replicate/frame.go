package replicate

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// serve sends the clients whose frame is due at tick r.tick (all of them
// when all is set) what they must learn: first the destruction of entities
// they knew that are gone, then a GameStateSync if the types changed, then,
// entity by entity in id order, EntityDestroy for what stopped being
// relevant (or must be spawned again with other visible fields),
// EntitySpawn for what became relevant, and EntityStateUpdate with the
// fields to repeat or refresh.
func (r *Replicator) serve(all bool) {
	t := r.tick
	rate, tr := uint64(r.cfg.Rate), uint64(r.cfg.TickRate)
	prepared := false
	for _, v := range r.order {
		if p := t + v.phase; !all && p*rate/tr == (p-1)*rate/tr {
			continue
		}
		if !prepared {
			r.prepare()
			prepared = true
		}
		r.replicateTo(v, t)
		r.stats.Frames++
	}
	r.pruneGone()
}

// prepare finds each client's lowest-id owned entity, its default
// viewpoint.
func (r *Replicator) prepare() {
	for _, v := range r.order {
		v.auto = nil
	}
	for _, e := range r.list { // ascending ids: the first owned is the lowest
		if e.owner == 0 {
			continue
		}
		if v := r.viewers[e.owner]; v != nil && v.auto == nil {
			v.auto = e
		}
	}
}

// pruneGone forgets the destroyed entities every client had a frame since.
func (r *Replicator) pruneGone() {
	if len(r.gone) == 0 {
		return
	}
	oldest := r.tick
	for _, v := range r.order {
		oldest = min(oldest, v.lastTick)
	}
	keep := r.gone[:0]
	for _, g := range r.gone {
		if g.tick > oldest {
			keep = append(keep, g)
		}
	}
	r.gone = keep
}

func (r *Replicator) replicateTo(v *viewer, t uint64) {
	for _, g := range r.gone {
		if _, ok := v.known[g.id]; ok && g.tick > v.lastTick {
			delete(v.known, g.id)
			r.sendDestroy(v, g.id)
		}
	}
	if cur := r.schemas.Load().version; v.types != cur {
		if r.cfg.GameStateSync != nil {
			r.buf = r.cfg.GameStateSync(v.id, r.buf[:0])
			if !r.send(v, gamemsg.TypeGameStateSync, wire.ReliableOrdered) {
				return // nothing of the new types before the client has them
			}
			r.stats.Syncs++
		}
		v.types = cur
	}
	// A change is repeated in the client's frames until one that is Repeats
	// frames after the first frame that carried it.
	var repeatFrom uint64
	if k := uint64(r.cfg.Repeats); v.frames >= k {
		repeatFrom = v.ticks[(v.frames-k)%MaxRepeats]
	}
	vp := r.viewpoint(v)
	// Whether the client is backlogged is asked once, and only when it has
	// a change to be sent: the question locks its session, and a frame
	// with nothing for it must not cost that (thousands of clients).
	backlog := backlogUnknown
	for _, e := range r.list {
		k, wasKnown := v.known[e.id]
		if !r.relevant(v, e, vp, wasKnown) {
			if wasKnown {
				delete(v.known, e.id)
				r.sendDestroy(v, e.id)
			}
			continue
		}
		vis := v.visible(e)
		if !wasKnown || k.visible != vis {
			if wasKnown {
				delete(v.known, e.id)
				r.sendDestroy(v, e.id)
			}
			if r.sendSpawn(v, e, vis) {
				v.known[e.id] = known{visible: vis, since: t}
			}
			continue
		}
		// The spawn carried the changes made before it.
		mask := e.changedAfter(max(repeatFrom, k.since)) & vis
		if mask != 0 && r.backlogged(v, &backlog) || r.refreshFrames != 0 && (v.frames+uint64(e.id))%uint64(r.refreshFrames) == 0 {
			mask = vis
		}
		if mask != 0 {
			r.sendUpdate(v, e, mask)
		}
	}
	v.ticks[v.frames%MaxRepeats] = t
	v.frames++
	v.lastTick = t
}

// The three answers of backlogged, asked at most once a frame.
const (
	backlogUnknown = iota
	backlogNo
	backlogYes
)

// backlogged reports whether v's state waits in the transport's queue
// (Config.Backlogged), asking the transport the first time in a frame and
// keeping the answer in *state.
func (r *Replicator) backlogged(v *viewer, state *int) bool {
	if *state == backlogUnknown {
		*state = backlogNo
		if r.cfg.Backlogged != nil && r.cfg.Backlogged(v.id) {
			*state = backlogYes
		}
	}
	return *state == backlogYes
}

func (r *Replicator) sendSpawn(v *viewer, e *entity, vis uint64) bool {
	b := binary.LittleEndian.AppendUint32(r.buf[:0], e.id)
	b = append(b, uint8(bits.OnesCount64(vis)))
	b = binary.LittleEndian.AppendUint64(b, vis)
	b = binary.LittleEndian.AppendUint16(b, e.t.ID)
	b = binary.LittleEndian.AppendUint32(b, e.owner)
	r.buf = e.appendFields(b, vis)
	if !r.send(v, gamemsg.TypeEntitySpawn, wire.ReliableOrdered) {
		return false
	}
	r.stats.Spawns++
	return true
}

func (r *Replicator) sendUpdate(v *viewer, e *entity, mask uint64) {
	b := binary.LittleEndian.AppendUint32(r.buf[:0], e.id)
	b = binary.LittleEndian.AppendUint64(b, mask)
	r.buf = e.appendFields(b, mask)
	if r.cfg.SendState == nil {
		if r.send(v, gamemsg.TypeEntityStateUpdate, wire.Unreliable) {
			r.stats.Updates++
		}
		return
	}
	if r.sent(v, r.cfg.SendState(v.id, gamemsg.TypeEntityStateUpdate, uint64(e.id), mask, r.buf), gamemsg.TypeEntityStateUpdate) {
		r.stats.Updates++
	}
}

func (r *Replicator) sendDestroy(v *viewer, id uint32) {
	r.buf = binary.LittleEndian.AppendUint32(r.buf[:0], id)
	if r.send(v, gamemsg.TypeEntityDestroy, wire.ReliableOrdered) {
		r.stats.Destroys++
	}
}

// send hands r.buf to the transport. A client that has just left is not an
// error (RemoveClient follows); any other refusal is counted and logged.
func (r *Replicator) send(v *viewer, t wire.MessageType, ch wire.Channel) bool {
	return r.sent(v, r.cfg.Send(v.id, t, ch, r.buf), t)
}

// sent accounts a send's outcome.
func (r *Replicator) sent(v *viewer, err error, t wire.MessageType) bool {
	if err == nil {
		r.stats.Bytes += uint64(len(r.buf))
		return true
	}
	if !errors.Is(err, netstack.ErrNoSuchClient) && !errors.Is(err, netstack.ErrServerClosed) {
		r.stats.SendErrors++
		r.cfg.Log.Debug("replication send failed", "client", v.id, "type", t.String(), "err", err)
	}
	return false
}
