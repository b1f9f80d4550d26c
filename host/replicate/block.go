package replicate

import (
	"fmt"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// Block is a module instance's block of entity ids: 1..255. Block b owns the
// ids b·2^24 … b·2^24 + 2^24 − 1; the block of an id is id >> 24, so id 0
// (lagcomp.NoEntity) and the ids below 2^24 belong to no module.
type Block uint8

// BlockBits is the number of id bits inside a block.
const BlockBits = 24

// Range returns the ids of block b (empty for block 0).
func (b Block) Range() module.IDRange {
	if b == 0 {
		return module.IDRange{First: 1, Last: 0}
	}
	first := uint32(b) << BlockBits
	return module.IDRange{First: first, Last: first | (1<<BlockBits - 1)}
}

// BlockOf returns the block an entity id belongs to.
func BlockOf(id uint32) Block { return Block(id >> BlockBits) }

// blockState is what a reserved block holds.
type blockState struct {
	used    bool
	owner   string   // the module's name, for messages
	types   []uint16 // the entity types the module declared
	next    uint32   // allocation cursor: the id a spawn with id 0 tries first
	count   int      // live entities
	hist    *lagcomp.History
	scratch []lagcomp.Entity
}

// ReserveBlock reserves the lowest free block for a module instance.
func (r *Replicator) ReserveBlock() (Block, error) {
	for b := 1; b < len(r.blocks); b++ {
		if !r.blocks[b].used {
			r.blocks[b] = blockState{used: true, next: Block(b).Range().First}
			return Block(b), nil
		}
	}
	return 0, ErrNoBlock
}

// ReleaseBlock clears a block (see Clear) and frees it for another module.
func (r *Replicator) ReleaseBlock(b Block) {
	if b == 0 || !r.blocks[b].used {
		return
	}
	r.Clear(b)
	r.blocks[b] = blockState{}
}

// Clear destroys every entity of block b and removes its entity types: the
// module unloaded or crashed. Clients are sent EntityDestroy, then a fresh
// GameStateSync, at the next frame.
func (r *Replicator) Clear(b Block) {
	bs, err := r.block(b)
	if err != nil {
		return
	}
	r.clearBlock(b)
	bs.hist = nil
}

// clearBlock destroys the block's entities and forgets its types.
func (r *Replicator) clearBlock(b Block) {
	bs := &r.blocks[b]
	if bs.count > 0 {
		keep := r.list[:0]
		for _, e := range r.list {
			if BlockOf(e.id) == b {
				delete(r.byID, e.id)
				r.gone = append(r.gone, gone{id: e.id, tick: r.stamp()})
				continue
			}
			keep = append(keep, e)
		}
		clear(r.list[len(keep):])
		r.list = keep
		bs.count = 0
	}
	if len(bs.types) > 0 {
		for _, id := range bs.types {
			delete(r.types, id)
		}
		bs.types = bs.types[:0]
		r.publishSchemas()
	}
	bs.next = b.Range().First
}

// block returns a reserved block's state.
func (r *Replicator) block(b Block) (*blockState, error) {
	if b == 0 || !r.blocks[b].used {
		return nil, fmt.Errorf("%w: %d", ErrBadBlock, b)
	}
	return &r.blocks[b], nil
}

func (r *Replicator) newHistory() *lagcomp.History {
	h, err := lagcomp.NewHistory(lagcomp.Config{Window: r.cfg.LagWindow, TickRate: r.cfg.TickRate, MaxEntities: r.cfg.MaxEntities})
	if err != nil {
		panic(err) // New checked every bound
	}
	return h
}
